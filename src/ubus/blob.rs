//! libubox `blob` / `blobmsg` codec (openwrt/libubox: blob.h, blobmsg.h, blobmsg_json.c).
//!
//! A `blob_attr` is `be32 id_len` (bit 31 EXTENDED, bits 30..24 id, bits 23..0 length
//! including the 4-byte header) followed by the payload; every attribute starts on a
//! 4-byte boundary and the padding is not counted in its own length, but it is counted
//! in the length of the attribute that nests it. A blobmsg attribute has the EXTENDED
//! bit set and starts its payload with `be16 namelen` + name + NUL, padded to 4.
//!
//! Decoding never panics on untrusted bytes: every length is checked and nesting depth
//! is bounded (a 1 MiB message could otherwise nest 250k tables and exhaust the stack).

use std::fmt;

/// Bit 31 of `id_len`: the attribute is a blobmsg (carries a name).
pub(crate) const BLOB_ATTR_EXTENDED: u32 = 0x8000_0000;
/// Bits 30..24 of `id_len`.
pub(crate) const BLOB_ATTR_ID_MASK: u32 = 0x7f00_0000;
pub(crate) const BLOB_ATTR_ID_SHIFT: u32 = 24;
/// Bits 23..0 of `id_len`: length including the header.
pub(crate) const BLOB_ATTR_LEN_MASK: u32 = 0x00ff_ffff;
/// Size of the `blob_attr` header.
pub(crate) const BLOB_HDR_LEN: usize = 4;

/// Deepest table/array nesting we accept from the wire.
pub(crate) const MAX_DEPTH: usize = 32;

/// blobmsg payload types (`enum blobmsg_type`). BOOL shares INT8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum BlobMsgType {
    Unspec = 0,
    Array = 1,
    Table = 2,
    String = 3,
    Int64 = 4,
    Int32 = 5,
    Int16 = 6,
    /// Also `BLOBMSG_TYPE_BOOL`.
    Int8 = 7,
    Double = 8,
}

impl BlobMsgType {
    pub(crate) fn from_u8(v: u8) -> Option<BlobMsgType> {
        Some(match v {
            0 => BlobMsgType::Unspec,
            1 => BlobMsgType::Array,
            2 => BlobMsgType::Table,
            3 => BlobMsgType::String,
            4 => BlobMsgType::Int64,
            5 => BlobMsgType::Int32,
            6 => BlobMsgType::Int16,
            7 => BlobMsgType::Int8,
            8 => BlobMsgType::Double,
            _ => return None,
        })
    }

    /// `BLOBMSG_TYPE_BOOL` is an alias of INT8 on the wire.
    pub(crate) const BOOL: BlobMsgType = BlobMsgType::Int8;
}

/// Why bytes were not a valid blob / blobmsg, or a value could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobError {
    /// Fewer bytes than a header or a declared length needs.
    Truncated,
    /// A declared length is smaller than its header or does not fit its container.
    BadLength,
    /// A blobmsg name is malformed (too long for the attr or not NUL-terminated).
    BadName,
    /// A string payload is not NUL-terminated or not UTF-8.
    BadString,
    /// A fixed-size payload has the wrong size for its type.
    BadSize(u8),
    /// An unknown blobmsg type.
    UnknownType(u8),
    /// A blobmsg attribute where a plain one was expected, or vice versa.
    NotExtended,
    /// Tables/arrays nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// Encoding would exceed the 24-bit length field or the ubus message limit.
    TooLong,
}

impl fmt::Display for BlobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlobError::Truncated => f.write_str("blob truncated"),
            BlobError::BadLength => f.write_str("blob length out of bounds"),
            BlobError::BadName => f.write_str("malformed blobmsg name"),
            BlobError::BadString => f.write_str("string not NUL-terminated UTF-8"),
            BlobError::BadSize(t) => write!(f, "wrong payload size for blobmsg type {t}"),
            BlobError::UnknownType(t) => write!(f, "unknown blobmsg type {t}"),
            BlobError::NotExtended => f.write_str("blobmsg/plain attribute mismatch"),
            BlobError::TooDeep => f.write_str("blobmsg nested too deep"),
            BlobError::TooLong => f.write_str("blob too long"),
        }
    }
}

impl std::error::Error for BlobError {}

/// One blobmsg value. Tables keep their wire order so that re-encoding is byte-exact.
#[derive(Debug, Clone, PartialEq)]
pub enum BlobValue {
    Unspec,
    Array(Vec<BlobValue>),
    Table(Table),
    String(String),
    Int64(i64),
    Int32(i32),
    Int16(i16),
    /// INT8, which is also BOOL; kept as the raw byte so odd values survive a round trip.
    Int8(u8),
    Double(f64),
}

/// Named blobmsg entries in wire order: a blobmsg table body, and also what ubus
/// carries in `UBUS_ATTR_DATA` and `UBUS_ATTR_SIGNATURE`.
pub type Table = Vec<(String, BlobValue)>;

impl BlobValue {
    pub(crate) fn bool(b: bool) -> BlobValue {
        BlobValue::Int8(u8::from(b))
    }

    pub fn str(s: &str) -> BlobValue {
        BlobValue::String(s.to_string())
    }

    pub(crate) fn msg_type(&self) -> BlobMsgType {
        match self {
            BlobValue::Unspec => BlobMsgType::Unspec,
            BlobValue::Array(_) => BlobMsgType::Array,
            BlobValue::Table(_) => BlobMsgType::Table,
            BlobValue::String(_) => BlobMsgType::String,
            BlobValue::Int64(_) => BlobMsgType::Int64,
            BlobValue::Int32(_) => BlobMsgType::Int32,
            BlobValue::Int16(_) => BlobMsgType::Int16,
            BlobValue::Int8(_) => BlobMsgType::Int8,
            BlobValue::Double(_) => BlobMsgType::Double,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            BlobValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// Integer view of any integer type, as `blobmsg_cast_u64` would read it (signed here).
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            BlobValue::Int64(v) => Some(v),
            BlobValue::Int32(v) => Some(i64::from(v)),
            BlobValue::Int16(v) => Some(i64::from(v)),
            BlobValue::Int8(v) => Some(i64::from(v)),
            _ => None,
        }
    }

    /// JSON -> blobmsg as `blobmsg_add_json_element` does it: bool -> INT8, integers ->
    /// INT32 when they fit else INT64 (json-c clamps beyond i64), float -> DOUBLE,
    /// null -> UNSPEC. serde_json objects iterate in key order (no `preserve_order`).
    pub fn from_json(v: &serde_json::Value) -> BlobValue {
        use serde_json::Value;
        match v {
            Value::Null => BlobValue::Unspec,
            Value::Bool(b) => BlobValue::bool(*b),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    match i32::try_from(i) {
                        Ok(i) => BlobValue::Int32(i),
                        Err(_) => BlobValue::Int64(i),
                    }
                } else if n.is_u64() {
                    // Above i64::MAX: json-c's get_int64 clamps.
                    BlobValue::Int64(i64::MAX)
                } else {
                    BlobValue::Double(n.as_f64().unwrap_or(0.0))
                }
            }
            Value::String(s) => BlobValue::String(s.clone()),
            Value::Array(a) => BlobValue::Array(a.iter().map(BlobValue::from_json).collect()),
            Value::Object(o) => BlobValue::Table(
                o.iter()
                    .map(|(k, v)| (k.clone(), BlobValue::from_json(v)))
                    .collect(),
            ),
        }
    }

    /// blobmsg -> JSON as `blobmsg_format_json` prints it: INT8 -> bool, INT32 signed,
    /// UNSPEC -> null. Non-finite doubles become null (JSON has no NaN).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            BlobValue::Unspec => Value::Null,
            BlobValue::Array(a) => Value::Array(a.iter().map(BlobValue::to_json).collect()),
            BlobValue::Table(t) => table_to_json(t),
            BlobValue::String(s) => Value::String(s.clone()),
            BlobValue::Int64(v) => Value::from(*v),
            BlobValue::Int32(v) => Value::from(*v),
            BlobValue::Int16(v) => Value::from(*v),
            BlobValue::Int8(v) => Value::Bool(*v != 0),
            BlobValue::Double(d) => serde_json::Number::from_f64(*d)
                .map(Value::Number)
                .unwrap_or(Value::Null),
        }
    }
}

/// A table body as a JSON object (later duplicate names win, as in json-c).
pub fn table_to_json(t: &Table) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for (k, v) in t {
        m.insert(k.clone(), v.to_json());
    }
    serde_json::Value::Object(m)
}

/// A JSON object as a table body; `None` if `v` is not an object (ubus method
/// arguments and replies are always tables).
pub fn table_from_json(v: &serde_json::Value) -> Option<Table> {
    match BlobValue::from_json(v) {
        BlobValue::Table(t) => Some(t),
        _ => None,
    }
}

/// Rounds up to the 4-byte blob alignment (`BLOB_ATTR_ALIGN`).
pub(crate) fn pad4(len: usize) -> usize {
    len.saturating_add(3) & !3
}

/// Bytes of `struct blobmsg_hdr` (be16 namelen + name + NUL, padded) that follow the
/// `blob_attr` header (`blobmsg_hdrlen`).
pub(crate) fn blobmsg_hdrlen(namelen: usize) -> usize {
    pad4(namelen.saturating_add(3))
}

/// A decoded `blob_attr` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AttrHdr {
    pub extended: bool,
    pub id: u8,
    /// Length including the 4-byte header, excluding padding.
    pub len: usize,
}

impl AttrHdr {
    pub fn parse(b: &[u8]) -> Result<AttrHdr, BlobError> {
        let raw: [u8; 4] = b
            .get(..BLOB_HDR_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or(BlobError::Truncated)?;
        let v = u32::from_be_bytes(raw);
        let len = (v & BLOB_ATTR_LEN_MASK) as usize;
        if len < BLOB_HDR_LEN {
            return Err(BlobError::BadLength);
        }
        Ok(AttrHdr {
            extended: v & BLOB_ATTR_EXTENDED != 0,
            id: ((v & BLOB_ATTR_ID_MASK) >> BLOB_ATTR_ID_SHIFT) as u8,
            len,
        })
    }

    pub(crate) fn to_bytes(self) -> [u8; 4] {
        let mut v = (u32::from(self.id) << BLOB_ATTR_ID_SHIFT) & BLOB_ATTR_ID_MASK;
        if self.extended {
            v |= BLOB_ATTR_EXTENDED;
        }
        // Callers check len against the mask before building the header.
        v |= (self.len as u32) & BLOB_ATTR_LEN_MASK;
        v.to_be_bytes()
    }
}

/// Walks the attributes packed in a container body (the `blob_for_each_attr` loop), but
/// strictly: every attribute's padded length must fit, and no bytes may be left over.
pub(crate) struct AttrIter<'a> {
    rest: &'a [u8],
}

impl<'a> AttrIter<'a> {
    pub fn new(body: &'a [u8]) -> AttrIter<'a> {
        AttrIter { rest: body }
    }
}

impl<'a> Iterator for AttrIter<'a> {
    /// The header and the payload (without header or padding).
    type Item = Result<(AttrHdr, &'a [u8]), BlobError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let hdr = match AttrHdr::parse(self.rest) {
            Ok(h) => h,
            Err(e) => {
                self.rest = &[];
                return Some(Err(e));
            }
        };
        let padded = pad4(hdr.len);
        // The last attribute of a container must still include its padding
        // (blob_buf always pads), so padded must fit too.
        match (
            self.rest.get(BLOB_HDR_LEN..hdr.len),
            self.rest.get(padded..),
        ) {
            (Some(payload), Some(rest)) => {
                self.rest = rest;
                Some(Ok((hdr, payload)))
            }
            _ => {
                self.rest = &[];
                Some(Err(BlobError::BadLength))
            }
        }
    }
}

/// Decodes a blobmsg attribute payload (after the `blob_attr` header) into name + value.
fn decode_blobmsg(
    hdr: AttrHdr,
    payload: &[u8],
    depth: usize,
) -> Result<(String, BlobValue), BlobError> {
    if !hdr.extended {
        return Err(BlobError::NotExtended);
    }
    let nl: [u8; 2] = payload
        .get(..2)
        .and_then(|s| s.try_into().ok())
        .ok_or(BlobError::BadName)?;
    let namelen = usize::from(u16::from_be_bytes(nl));
    // blobmsg_check_name: name + NUL must fit, NUL must be there.
    let name_bytes = payload.get(2..2 + namelen).ok_or(BlobError::BadName)?;
    if payload.get(2 + namelen) != Some(&0) {
        return Err(BlobError::BadName);
    }
    let name = std::str::from_utf8(name_bytes)
        .map_err(|_| BlobError::BadName)?
        .to_string();
    let data_off = blobmsg_hdrlen(namelen);
    let data = payload.get(data_off..).ok_or(BlobError::BadLength)?;
    let ty = BlobMsgType::from_u8(hdr.id).ok_or(BlobError::UnknownType(hdr.id))?;
    Ok((name, decode_value(ty, data, depth)?))
}

fn fixed<const N: usize>(ty: BlobMsgType, data: &[u8]) -> Result<[u8; N], BlobError> {
    data.try_into().map_err(|_| BlobError::BadSize(ty as u8))
}

fn decode_value(ty: BlobMsgType, data: &[u8], depth: usize) -> Result<BlobValue, BlobError> {
    Ok(match ty {
        BlobMsgType::Unspec => BlobValue::Unspec,
        BlobMsgType::Int8 => BlobValue::Int8(fixed::<1>(ty, data)?[0]),
        BlobMsgType::Int16 => BlobValue::Int16(i16::from_be_bytes(fixed(ty, data)?)),
        BlobMsgType::Int32 => BlobValue::Int32(i32::from_be_bytes(fixed(ty, data)?)),
        BlobMsgType::Int64 => BlobValue::Int64(i64::from_be_bytes(fixed(ty, data)?)),
        BlobMsgType::Double => {
            BlobValue::Double(f64::from_bits(u64::from_be_bytes(fixed(ty, data)?)))
        }
        BlobMsgType::String => BlobValue::String(decode_cstring(data)?),
        BlobMsgType::Table => BlobValue::Table(decode_table_depth(data, depth + 1)?),
        BlobMsgType::Array => BlobValue::Array(
            decode_table_depth(data, depth + 1)?
                .into_iter()
                .map(|(_, v)| v)
                .collect(),
        ),
    })
}

/// A `BLOB_ATTR_STRING` payload: bytes up to a mandatory trailing NUL.
pub(crate) fn decode_cstring(data: &[u8]) -> Result<String, BlobError> {
    match data.split_last() {
        Some((0, s)) => std::str::from_utf8(s)
            .map(str::to_string)
            .map_err(|_| BlobError::BadString),
        _ => Err(BlobError::BadString),
    }
}

/// Decodes a blobmsg table body (a list of named blobmsg attributes).
pub(crate) fn decode_table(body: &[u8]) -> Result<Table, BlobError> {
    decode_table_depth(body, 0)
}

fn decode_table_depth(body: &[u8], depth: usize) -> Result<Table, BlobError> {
    if depth > MAX_DEPTH {
        return Err(BlobError::TooDeep);
    }
    let mut out = Vec::new();
    for item in AttrIter::new(body) {
        let (hdr, payload) = item?;
        out.push(decode_blobmsg(hdr, payload, depth)?);
    }
    Ok(out)
}

/// Appends one attribute whose payload `fill` writes, then patches its length and pads.
pub(crate) fn put_attr<F>(
    out: &mut Vec<u8>,
    extended: bool,
    id: u8,
    fill: F,
) -> Result<(), BlobError>
where
    F: FnOnce(&mut Vec<u8>) -> Result<(), BlobError>,
{
    let start = out.len();
    out.extend_from_slice(&[0; BLOB_HDR_LEN]);
    fill(out)?;
    let len = out.len() - start;
    if len > BLOB_ATTR_LEN_MASK as usize {
        return Err(BlobError::TooLong);
    }
    let hdr = AttrHdr { extended, id, len }.to_bytes();
    out[start..start + BLOB_HDR_LEN].copy_from_slice(&hdr);
    out.resize(start + pad4(len), 0);
    Ok(())
}

/// Appends a named blobmsg attribute (`blobmsg_add_field`).
pub(crate) fn put_blobmsg(out: &mut Vec<u8>, name: &str, v: &BlobValue) -> Result<(), BlobError> {
    let namelen = u16::try_from(name.len()).map_err(|_| BlobError::TooLong)?;
    put_attr(out, true, v.msg_type() as u8, |out| {
        put_name(out, namelen, name);
        put_value(out, v)
    })
}

fn put_name(out: &mut Vec<u8>, namelen: u16, name: &str) {
    let name_start = out.len();
    out.extend_from_slice(&namelen.to_be_bytes());
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    out.resize(name_start + blobmsg_hdrlen(name.len()), 0);
}

/// A named blobmsg array or table being written a member at a time
/// (`blobmsg_open_array`): its header is patched by [`Open::close`], so
/// the members need not be held as values until the end.
pub(crate) struct Open {
    start: usize,
    ty: BlobMsgType,
}

impl Open {
    pub(crate) fn new(out: &mut Vec<u8>, name: &str, ty: BlobMsgType) -> Result<Open, BlobError> {
        let namelen = u16::try_from(name.len()).map_err(|_| BlobError::TooLong)?;
        let start = out.len();
        out.extend_from_slice(&[0; BLOB_HDR_LEN]);
        put_name(out, namelen, name);
        Ok(Open { start, ty })
    }

    /// Ends it after what was appended since [`Open::new`], as
    /// [`put_blobmsg`] would have written it whole.
    pub(crate) fn close(self, out: &mut Vec<u8>) -> Result<(), BlobError> {
        let len = out.len() - self.start;
        if len > BLOB_ATTR_LEN_MASK as usize {
            return Err(BlobError::TooLong);
        }
        let hdr = AttrHdr {
            extended: true,
            id: self.ty as u8,
            len,
        }
        .to_bytes();
        out[self.start..self.start + BLOB_HDR_LEN].copy_from_slice(&hdr);
        out.resize(self.start + pad4(len), 0);
        Ok(())
    }
}

fn put_value(out: &mut Vec<u8>, v: &BlobValue) -> Result<(), BlobError> {
    match v {
        BlobValue::Unspec => {}
        BlobValue::Int8(x) => out.push(*x),
        BlobValue::Int16(x) => out.extend_from_slice(&x.to_be_bytes()),
        BlobValue::Int32(x) => out.extend_from_slice(&x.to_be_bytes()),
        BlobValue::Int64(x) => out.extend_from_slice(&x.to_be_bytes()),
        BlobValue::Double(x) => out.extend_from_slice(&x.to_bits().to_be_bytes()),
        BlobValue::String(s) => {
            out.extend_from_slice(s.as_bytes());
            out.push(0);
        }
        BlobValue::Table(t) => put_table(out, t)?,
        BlobValue::Array(a) => {
            for item in a {
                put_blobmsg(out, "", item)?;
            }
        }
    }
    Ok(())
}

/// Appends a table body: each entry as a named blobmsg attribute.
pub(crate) fn put_table(out: &mut Vec<u8>, t: &Table) -> Result<(), BlobError> {
    for (name, v) in t {
        put_blobmsg(out, name, v)?;
    }
    Ok(())
}

/// Encodes a table body on its own (the tests' round trips; the client
/// encodes tables inside messages).
#[cfg(test)]
pub(crate) fn encode_table(t: &Table) -> Result<Vec<u8>, BlobError> {
    let mut out = Vec::new();
    put_table(&mut out, t)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An array written a member at a time is the array written whole.
    #[test]
    fn an_open_array_closes_as_the_whole_one() {
        let items = [
            json!({"a": 1, "b": "xyz"}),
            json!("s"),
            json!(null),
            json!([1.5]),
        ];
        let whole = BlobValue::from_json(&json!(items));
        let mut want = Vec::new();
        put_blobmsg(&mut want, "vips", &whole).unwrap();
        let mut got = vec![7u8; 4];
        let open = Open::new(&mut got, "vips", BlobMsgType::Array).unwrap();
        for i in &items {
            put_blobmsg(&mut got, "", &BlobValue::from_json(i)).unwrap();
        }
        open.close(&mut got).unwrap();
        assert_eq!(&got[4..], &want[..]);
    }

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn invoke_args_from_capture_09() {
        // DATA body of 09_call_count_all_blobmsg_types.hex msg 5.
        let body = hex("85000010 0002746f00000000 00000003
            83000017 0006737472696e6700000000 30203120322000 00
            8700000d 0004666c61670000 01 000000
            84000014 0003693634000000 000000012a05f200
            88000014 000364626c000000 3ff8000000000000
            81000024 0003617272000000 8500000c 00000000 00000001 8300000a 00000000 6100 0000
            82000018 000374626c000000 8300000a 00016b00 7600 0000");
        let t = decode_table(&body).unwrap();
        let want = vec![
            ("to".to_string(), BlobValue::Int32(3)),
            ("string".to_string(), BlobValue::str("0 1 2 ")),
            ("flag".to_string(), BlobValue::Int8(1)),
            ("i64".to_string(), BlobValue::Int64(5_000_000_000)),
            ("dbl".to_string(), BlobValue::Double(1.5)),
            (
                "arr".to_string(),
                BlobValue::Array(vec![BlobValue::Int32(1), BlobValue::str("a")]),
            ),
            (
                "tbl".to_string(),
                BlobValue::Table(vec![("k".to_string(), BlobValue::str("v"))]),
            ),
        ];
        assert_eq!(t, want);
        assert_eq!(encode_table(&t).unwrap(), body);
        assert_eq!(
            table_to_json(&t),
            json!({"to":3,"string":"0 1 2 ","flag":true,"i64":5000000000i64,"dbl":1.5,
                   "arr":[1,"a"],"tbl":{"k":"v"}})
        );
    }

    #[test]
    fn json_mapping_matches_blobmsg_json() {
        assert_eq!(BlobValue::from_json(&json!(true)), BlobValue::Int8(1));
        assert_eq!(BlobValue::from_json(&json!(false)), BlobValue::Int8(0));
        assert_eq!(BlobValue::from_json(&json!(-5)), BlobValue::Int32(-5));
        assert_eq!(
            BlobValue::from_json(&json!(2147483647)),
            BlobValue::Int32(i32::MAX)
        );
        assert_eq!(
            BlobValue::from_json(&json!(2147483648i64)),
            BlobValue::Int64(2147483648)
        );
        assert_eq!(
            BlobValue::from_json(&json!(-2147483649i64)),
            BlobValue::Int64(-2147483649)
        );
        assert_eq!(
            BlobValue::from_json(&json!(u64::MAX)),
            BlobValue::Int64(i64::MAX)
        );
        assert_eq!(BlobValue::from_json(&json!(0.25)), BlobValue::Double(0.25));
        assert_eq!(BlobValue::from_json(&json!(null)), BlobValue::Unspec);
        assert_eq!(BlobValue::Int16(-2).to_json(), json!(-2));
        assert_eq!(BlobValue::Int8(2).to_json(), json!(true));
        assert_eq!(BlobValue::Double(f64::NAN).to_json(), json!(null));
        assert_eq!(table_from_json(&json!([1])), None);
    }

    #[test]
    fn rejects_malformed() {
        // Length below header size.
        assert_eq!(decode_table(&hex("85000003")), Err(BlobError::BadLength));
        // Declared length beyond the buffer.
        assert_eq!(
            decode_table(&hex("85000010 00026964")),
            Err(BlobError::BadLength)
        );
        // Trailing partial header.
        assert_eq!(decode_table(&hex("0000")), Err(BlobError::Truncated));
        // Name not NUL-terminated.
        assert_eq!(
            decode_table(&hex("8500000c 00016b61 00000001")),
            Err(BlobError::BadName)
        );
        // INT32 with a 2-byte payload.
        assert_eq!(
            decode_table(&hex("8500000a 00016b00 0001 0000")),
            Err(BlobError::BadSize(5))
        );
        // String without NUL.
        assert_eq!(
            decode_table(&hex("8300000a 00016b00 7676 0000")),
            Err(BlobError::BadString)
        );
        // Plain attr inside a blobmsg table.
        assert_eq!(
            decode_table(&hex("05000008 00000001")),
            Err(BlobError::NotExtended)
        );
        assert_eq!(
            decode_table(&hex("8900000c 00016b00 00000001")),
            Err(BlobError::UnknownType(9))
        );
    }

    #[test]
    fn depth_is_bounded() {
        let mut v = BlobValue::Unspec;
        for _ in 0..(MAX_DEPTH + 2) {
            v = BlobValue::Array(vec![v]);
        }
        let body = encode_table(&vec![("x".to_string(), v)]).unwrap();
        assert_eq!(decode_table(&body), Err(BlobError::TooDeep));
    }

    fn arb_value() -> impl proptest::strategy::Strategy<Value = BlobValue> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(BlobValue::Unspec),
            any::<i64>().prop_map(BlobValue::Int64),
            any::<i32>().prop_map(BlobValue::Int32),
            any::<i16>().prop_map(BlobValue::Int16),
            any::<u8>().prop_map(BlobValue::Int8),
            any::<f64>()
                .prop_filter("NaN != NaN", |d| !d.is_nan())
                .prop_map(BlobValue::Double),
            "[a-z0-9 ]{0,9}".prop_map(BlobValue::String),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(BlobValue::Array),
                proptest::collection::vec(("[a-z]{0,7}", inner), 0..5).prop_map(BlobValue::Table),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn roundtrip(t in proptest::collection::vec(("[a-z_]{0,12}", arb_value()), 0..6)) {
            let bytes = encode_table(&t).unwrap();
            proptest::prop_assert_eq!(bytes.len() % 4, 0);
            let back = decode_table(&bytes).unwrap();
            proptest::prop_assert_eq!(&back, &t);
            proptest::prop_assert_eq!(encode_table(&back).unwrap(), bytes);
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = decode_table(&bytes);
        }
    }
}
