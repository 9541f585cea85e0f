//! nom glue, private to the codec: `complete` parsers over plain `&[u8]`
//! whose failures are turned into a [`Notification`] at the call site, so
//! `nom::Err` never leaves this module tree.

use nom::bytes::complete::take;
use nom::number::complete::{be_u16, be_u32, be_u8};
use nom::{IResult, Parser};

use super::Notification;

/// A parse step that can only fail for lack of input.
type Step<'a, O> = IResult<&'a [u8], O>;

/// Runs a nom step, replacing any failure with `err()`.
pub(crate) fn run<'a, O>(
    step: Step<'a, O>,
    err: impl FnOnce() -> Notification,
) -> Result<(&'a [u8], O), Notification> {
    step.map_err(|_| err())
}

pub(crate) fn u8_(
    i: &[u8],
    err: impl FnOnce() -> Notification,
) -> Result<(&[u8], u8), Notification> {
    run(be_u8(i), err)
}

pub(crate) fn u16_(
    i: &[u8],
    err: impl FnOnce() -> Notification,
) -> Result<(&[u8], u16), Notification> {
    run(be_u16(i), err)
}

pub(crate) fn u32_(
    i: &[u8],
    err: impl FnOnce() -> Notification,
) -> Result<(&[u8], u32), Notification> {
    run(be_u32(i), err)
}

/// Takes exactly `n` octets; fails (never panics) when fewer remain.
pub(crate) fn bytes(
    i: &[u8],
    n: usize,
    err: impl FnOnce() -> Notification,
) -> Result<(&[u8], &[u8]), Notification> {
    run(take(n).parse(i), err)
}

/// Plain nom step for code that wants nom's combinators directly.
pub(crate) fn length_value_u8(i: &[u8]) -> Step<'_, &[u8]> {
    let (i, len) = be_u8(i)?;
    take(len).parse(i)
}
