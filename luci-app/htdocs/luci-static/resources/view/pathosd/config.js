'use strict';
'require view';
'require form';
'require uci';
'require rpc';
'require poll';
'require ui';
'require dom';
'require pathosd.common as common';

/*
 * Editor for /etc/config/pathosd. The option names are the daemon's UCI
 * names (crates/pathosd-core/src/config/uci_map/layout.rs); Save & Apply commits
 * through rpcd, whose config.change event makes procd run
 * "/etc/init.d/pathosd reload", which has pathosd reload. An invalid file is
 * rejected by the daemon, which keeps running with its previous
 * configuration, and refused by the init script at the next start. So every
 * apply from this page (its Save & Apply, and the header's Unsaved Changes
 * dialog) first has the staged configuration checked by the daemon's own
 * rules (pathosd's rpcd plugin runs "pathosd validate" on what uci apply
 * would commit, whether or not pathosd runs, whatever its size: the page and
 * the daemon cannot disagree), and applies nothing it refuses or cannot
 * check (common.guardApply). The fields check what they can as they are
 * typed. The daemon's last reload (ubus status last_reload) is shown when it
 * was rejected or applied only in part.
 *
 * A dialog writes what the user changed and nothing else: LuCI's form.js
 * would also write every ticked Flag, remove a value equal to its default,
 * remove the value of every option whose "depends" are not met and replace
 * a value its select does not offer with the first choice (guard() below).
 *
 * Defaults: every form default and placeholder is the daemon's default
 * (schema/pathosd-config-v1.schema.json), so what the form shows for an unset
 * option is what the daemon does; Flags whose daemon default is on have
 * default '1', so unticking writes '0'.
 */

/* The staged configuration's size, from pathosd's rpcd plugin: { bytes,
 * sections, uci_get: the bytes of rpcd's reply to uci get of it all }. */
var callStagedSize = rpc.declare({
	object: 'pathosd-staged',
	method: 'size',
	expect: { '': {} },
	reject: true
});

/* The largest uci get reply the page asks rpcd for (uci.load): ubusd carries
 * at most 1 MiB in one message, and past it rpcd exits (every LuCI session
 * is lost; after five exits procd stops respawning it). About 2,300 VIPs
 * with a tcp check each, or 5,500 "always" ones; room is left for what is
 * added while the page is open, as each save loads it again. */
var MAX_UCI_GET = 768 * 1024;

/* Only last_reload is needed here: no VIPs (limit 0). */
var callStatus = rpc.declare({
	object: 'pathosd',
	method: 'status',
	params: [ 'limit' ],
	expect: { '': {} },
	reject: true
});

var DURATION_RE = new RegExp('^([0-9]+(\\.[0-9]+)?(ns|us|\u00b5s|ms|s|m|h))+$');
var DURATION_PART_RE = new RegExp('([0-9]+(?:\\.[0-9]+)?)(ns|us|\u00b5s|ms|s|m|h)', 'g');
var COMMUNITY_RE = new RegExp('^([0-9]{1,5}):([0-9]{1,5})$');
var LARGE_COMMUNITY_RE = new RegExp('^([0-9]{1,10}):([0-9]{1,10}):([0-9]{1,10})$');
var PLACEHOLDER_RE = new RegExp('%\\{[A-Za-z_][A-Za-z0-9_]*\\}');
/* Neighbor and VIP names: API paths, metric labels, ubus (validate.rs object_name). */
var OBJECT_NAME_RE = new RegExp('^[A-Za-z0-9_.-]+$');
/* Check names are checks_policy identifiers, minus its reserved words. */
var CHECK_NAME_RE = new RegExp('^[A-Za-z_][A-Za-z0-9_]*$');
var RESERVED = [ 'all', 'any', 'and', 'or', 'not', 'at_least', 'ratio' ];
var UNIT_NS = { ns: 1, us: 1e3, '\u00b5s': 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

var CHECK_TYPES = [ 'http', 'https', 'dns', 'ping', 'tcp', 'udp', 'grpc', 'exec', 'ubus' ];

/* %{VAR} placeholders are expanded by the daemon; they are not checked here. */
function placeholder(value) {
	return value != null && PLACEHOLDER_RE.test(value);
}

/* A duration in nanoseconds; null when it is not one (or a placeholder). */
function durationNs(value) {
	var m, total = 0;

	if (value == null || value === '' || placeholder(value))
		return null;
	if (value === '0')
		return 0;
	if (!DURATION_RE.test(value))
		return null;

	DURATION_PART_RE.lastIndex = 0;
	while ((m = DURATION_PART_RE.exec(value)) != null)
		total += parseFloat(m[1]) * UNIT_NS[m[2]];

	return total;
}

function validateDuration(section_id, value) {
	if (value == null || value === '' || value === '0' || placeholder(value))
		return true;

	return DURATION_RE.test(value) ? true : _('Expecting a duration such as 500ms, 2s or 1m30s');
}

/* hooks.timeout (validate.rs): a duration of more than 0s; 0 would kill
 * every script as it starts. */
function validateHookTimeout(section_id, value) {
	var ok = validateDuration(section_id, value);

	if (ok !== true)
		return ok;
	return durationNs(value) === 0 ? _('Must be more than 0s') : true;
}

/* api.token (validate.rs): 16 to 256 characters of RFC 6750's b64token. */
function validateApiToken(section_id, value) {
	if (value == null || value === '')
		return true;
	if (value.length < 16 || value.length > 256)
		return _('The token must have 16 to 256 characters');
	return /^[A-Za-z0-9._~+\/-]+=*$/.test(value) ? true
		: _('Only letters, digits and - . _ ~ + / (then = padding)');
}

/* error_wait_min / error_wait_max (validate.rs): 100ms to 1h, min <= max. */
function validateErrorWait(section_id, value) {
	var ok = validateDuration(section_id, value), sec = this.section, lo, hi, ns;

	if (ok !== true || value == null || value === '')
		return ok;
	ns = durationNs(value);
	if (ns == null)
		return true;
	if (ns < 100e6 || ns > 3600e9)
		return _('Expecting 100ms to 1h');
	lo = durationNs(this.option === 'error_wait_min' ? value : (sec.formvalue(section_id, 'error_wait_min') || '1s'));
	hi = durationNs(this.option === 'error_wait_max' ? value : (sec.formvalue(section_id, 'error_wait_max') || '60s'));
	return (lo != null && hi != null && lo > hi) ? _('The minimum must not be more than the maximum') : true;
}

/* A neighbor's BFD intervals (validate/bgp.rs): 10ms to 60s; 0 is not
 * "off" there. */
function validateBfdInterval(section_id, value) {
	var ok = validateDuration(section_id, value), ns;

	if (ok !== true || value == null || value === '')
		return ok;
	ns = durationNs(value);
	if (ns == null)
		return true;
	return (ns < 10e6 || ns > 60e9) ? _('Expecting 10ms to 60s') : true;
}

/* A neighbor's send_hold_time (validate/bgp.rs, RFC 9687 section 3.4):
 * 0 (off) or more than its hold time: the neighbor's hold_time, else
 * main's, else the daemon's 90s. */
function validateSendHoldTime(section_id, value) {
	var ok = validateDuration(section_id, value), ns, hold, holdText;

	if (ok !== true)
		return ok;
	ns = durationNs(value);
	if (ns == null || ns === 0)
		return true;
	holdText = this.section.formvalue(section_id, 'hold_time');
	if (durationNs(holdText) == null)
		holdText = uci.get('pathosd', 'main', 'hold_time');
	if (durationNs(holdText) == null)
		holdText = '90s';
	hold = durationNs(holdText);
	return ns <= hold ? _('Must be 0 (off) or more than the hold time %s').replace('%s', holdText) : true;
}

/* policy.damping (validate/vip.rs damping, vip/damping.rs): half_life
 * 1s to 45m, max_suppress at most 12h, reuse at least 1 and below
 * suppress (the daemon's 750 and 2000 when empty). That suppress stays
 * below the penalty's ceiling is left to the daemon's check at Save &
 * Apply. */
function validateDampingHalfLife(section_id, value) {
	var ok = validateDuration(section_id, value), ns = durationNs(value);

	if (ok !== true || ns == null)
		return ok;
	return (ns < 1e9 || ns > 45 * 60e9) ? _('Expecting 1s to 45m') : true;
}

function validateDampingMaxSuppress(section_id, value) {
	var ok = validateDuration(section_id, value), ns = durationNs(value);

	if (ok !== true || ns == null)
		return ok;
	return ns > 12 * 3600e9 ? _('Must be at most 12h') : true;
}

function validateDampingReuse(section_id, value) {
	var suppress = this.section.formvalue(section_id, 'damping_suppress');
	var reuse = (value == null || value === '') ? 750 : +value;

	if (suppress == null || suppress === '')
		suppress = '2000';
	if (!/^[0-9]+$/.test(String(suppress)))
		return true;
	return (reuse < 1 || reuse >= +suppress)
		? _('Must be at least 1 and less than the suppress limit %s').replace('%s', suppress) : true;
}

/* degraded_latency (validate/check.rs): above 0, below the check's timeout. */
function validateDegradedLatency(section_id, value) {
	var ok = validateDuration(section_id, value), ns, timeout;

	if (ok !== true || value == null || value === '')
		return ok;
	ns = durationNs(value);
	if (ns == null)
		return true;
	timeout = durationNs(this.section.formvalue(section_id, 'timeout'));
	if (timeout == null) timeout = durationNs(CHECK_DEFAULTS.timeout);
	if (ns <= 0)
		return _('Must be greater than 0');
	return (timeout != null && ns >= timeout) ? _('Must be less than the timeout') : true;
}

/* The check's timeout must be strictly less than its interval (validate.rs). */
function validateTiming(section_id, value) {
	var ok = validateDuration(section_id, value), sec = this.section;
	var interval, timeout;

	if (ok !== true)
		return ok;

	interval = durationNs(this.option === 'interval' ? value : sec.formvalue(section_id, 'interval'));
	timeout = durationNs(this.option === 'timeout' ? value : sec.formvalue(section_id, 'timeout'));
	/* Empty: the daemon's default. */
	if (interval == null) interval = durationNs(CHECK_DEFAULTS.interval);
	if (timeout == null) timeout = durationNs(CHECK_DEFAULTS.timeout);

	if (interval != null && timeout != null && timeout >= interval)
		return _('The timeout must be less than the interval');

	return true;
}

/* A ubus check's args: a JSON object (schema/checks.rs, UbusArgs). */
function validateJsonObject(section_id, value) {
	var v;

	if (value == null || value === '')
		return true;
	try {
		v = JSON.parse(value);
	} catch (e) {
		return _('Expecting a JSON object such as {"name": "dnsmasq"}');
	}
	return (v != null && typeof v === 'object' && !Array.isArray(v)) ? true : _('Expecting a JSON object such as {"name": "dnsmasq"}');
}

/* fast_interval, when set: more than the timeout, at most the interval
 * (validate/check.rs). */
function validateFastInterval(section_id, value) {
	var ok = validateDuration(section_id, value), sec = this.section;
	var fast, interval, timeout;

	if (ok !== true)
		return ok;
	fast = durationNs(value);
	if (fast == null)
		return true;
	interval = durationNs(sec.formvalue(section_id, 'interval'));
	timeout = durationNs(sec.formvalue(section_id, 'timeout'));
	if (interval == null) interval = durationNs(CHECK_DEFAULTS.interval);
	if (timeout == null) timeout = durationNs(CHECK_DEFAULTS.timeout);

	if (fast == 0)
		return _('Must be greater than 0');
	if (interval != null && fast > interval)
		return _('The fast interval must not be more than the interval');
	if (timeout != null && fast <= timeout)
		return _('The fast interval must be more than the timeout');

	return true;
}

function validateCommunity(section_id, value) {
	var m;

	if (value == null || value === '' || placeholder(value))
		return true;

	m = COMMUNITY_RE.exec(value);
	/* RFC 1997: a community is two 16-bit values. */
	if (!m || +m[1] > 65535 || +m[2] > 65535)
		return _('Expecting ASN:VALUE, each 0 to 65535, for example 65001:100');

	return true;
}

function validateLargeCommunity(section_id, value) {
	var m;

	if (value == null || value === '' || placeholder(value))
		return true;

	m = LARGE_COMMUNITY_RE.exec(value);
	/* RFC 8092: three 32-bit values. */
	if (!m || +m[1] > 4294967295 || +m[2] > 4294967295 || +m[3] > 4294967295)
		return _('Expecting GLOBAL:LOCAL1:LOCAL2, each 0 to 4294967295, for example 65001:1:666');

	return true;
}

function validateObjectName(section_id, value) {
	if (value == null || value === '' || OBJECT_NAME_RE.test(value))
		return true;

	return _('Only letters, digits, _, - and . are allowed');
}

function validateCheckName(section_id, value) {
	if (value == null || value === '')
		return true;
	if (!CHECK_NAME_RE.test(value))
		return _('A letter or _ first, then letters, digits and _ (checks policy names)');
	if (RESERVED.indexOf(value) >= 0)
		return _('Reserved in checks policy: %s').replace('%s', RESERVED.join(', '));

	return true;
}

/* A VIP prefix: an address and length (parsePrefix), its network, and
 * whether the address has host bits set. null when it is no prefix. */
function parseIp4(s) {
	var p = s.split('.'), n = 0, i;

	if (p.length != 4)
		return null;
	/* As Rust's Ipv4Addr, the daemon's parser: no leading zeros (010 is
	 * refused, not read as 10 or as octal 8). */
	for (i = 0; i < 4; i++) {
		if (!/^(0|[1-9][0-9]{0,2})$/.test(p[i]) || +p[i] > 255)
			return null;
		n = n * 256 + (+p[i]);
	}
	return n;
}

function formatIp4(n) {
	return [ n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255 ].join('.');
}

/* Eight 16-bit groups, or null. */
function parseIp6(s) {
	var halves = s.split('::'), head, tail, v4, groups, i;

	if (!/^[0-9A-Fa-f:.]+$/.test(s) || halves.length > 2)
		return null;
	head = halves[0] === '' ? [] : halves[0].split(':');
	tail = halves.length == 2 ? (halves[1] === '' ? [] : halves[1].split(':')) : [];
	groups = head.concat(tail);
	/* An IPv4 address in the last two groups (::ffff:192.0.2.1). */
	if (groups.length && groups[groups.length - 1].indexOf('.') >= 0) {
		v4 = parseIp4(groups[groups.length - 1]);
		if (v4 == null)
			return null;
		if (tail.length) tail.splice(-1, 1, (v4 >>> 16).toString(16), (v4 & 65535).toString(16));
		else head.splice(-1, 1, (v4 >>> 16).toString(16), (v4 & 65535).toString(16));
	}
	groups = head.concat(tail);
	for (i = 0; i < groups.length; i++)
		if (!/^[0-9A-Fa-f]{1,4}$/.test(groups[i]))
			return null;
	if (halves.length == 2 ? groups.length > 7 : groups.length != 8)
		return null;
	while (head.length + tail.length < 8)
		head.push('0');
	return head.concat(tail).map(function(g) { return parseInt(g, 16); });
}

/* RFC 5952: lower case, the longest run of two or more zero groups as ::. */
function formatIp6(g) {
	var best = -1, bestLen = 1, i, j, out;

	for (i = 0; i < 8; i++) {
		for (j = i; j < 8 && g[j] === 0; j++);
		if (j - i > bestLen) {
			best = i;
			bestLen = j - i;
		}
	}
	out = g.map(function(x) { return x.toString(16); });
	if (best < 0)
		return out.join(':');
	return out.slice(0, best).join(':') + '::' + out.slice(best + bestLen).join(':');
}

/* As the daemon reads a VIP prefix (config field.rs, bgp/types.rs
 * Prefix::from_str): ADDRESS/LENGTH, LENGTH a u8 (Rust's parser takes a +
 * and leading zeros) of at most 32 or 128. */
function parsePrefix(value) {
	var m = /^([^\/]+)\/\+?([0-9]+)$/.exec(value || ''), len, a, mask, net, g, i, bits;

	if (!m || +m[2] > 255)
		return null;
	len = +m[2];
	a = parseIp4(m[1]);
	if (a != null) {
		if (len > 32)
			return null;
		mask = len ? (0xffffffff << (32 - len)) >>> 0 : 0;
		net = (a & mask) >>> 0;
		return { addr: m[1], len: len, max: 32, network: formatIp4(net), hostBits: net !== a };
	}
	g = parseIp6(m[1]);
	if (g == null || len > 128)
		return null;
	net = g.map(function(x, k) {
		bits = Math.max(0, Math.min(16, len - 16 * k));
		return bits ? x & ((0xffff << (16 - bits)) & 0xffff) : 0;
	});
	for (i = 0; i < 8 && net[i] === g[i]; i++);
	return { addr: m[1], len: len, max: 128, network: formatIp6(net), hostBits: i < 8 };
}

/* The daemon takes a VIP prefix only without host bits: 10.10.1.5/24 would
 * be announced as 10.10.1.0/24 while meaning one address; and a default
 * route (0.0.0.0/0, ::/0) only with allow_default_route. */
function validatePrefix(section_id, value) {
	var p, allow;

	if (value == null || value === '' || placeholder(value))
		return true;
	p = parsePrefix(value);
	if (!p)
		return _('Expecting an IPv4 or IPv6 prefix, for example 192.0.2.10/32');
	if (p.hostBits)
		return _('%s has host bits set: write %s for this address alone, or %s for the network')
			.replace('%s', value).replace('%s', p.addr + '/' + p.max).replace('%s', p.network + '/' + p.len);
	if (p.len === 0) {
		allow = (this && this.section) ? this.section.formvalue(section_id, 'allow_default_route') : null;
		if (!isOn(allow != null ? allow : uci.get('pathosd', section_id, 'allow_default_route')))
			return _('%s is a default route: announcing it draws all traffic to this router. Tick "Allow a default route" if that is meant.').replace('%s', value);
	}
	return true;
}

/* A tcp, udp or grpc check needs a port; the others take it from the URL
 * or their default. */
function validateCheckPort(section_id, value) {
	var t = this.section.formvalue(section_id, 'type');

	if ((value == null || value === '') && (t == 'tcp' || t == 'udp' || t == 'grpc'))
		return _('A %s check needs a port').replace('%s', t);
	return true;
}

var isOn = common.isOn;
var isOff = common.isOff;

/* The name the daemon uses: option name, else the section name. */
function objectName(s) {
	return (s && s.name) ? s.name : (s ? s['.name'] : null);
}

/* A check's name: option name, else the section name, else its type. */
function checkName(s) {
	if (!s) return null;
	if (s.name) return s.name;
	return s['.anonymous'] ? (s.type || s['.name']) : s['.name'];
}

/* The VIP sections a check's vip option names (by name or section name). */
function vipsNamed(name) {
	return uci.sections('pathosd', 'vip').filter(function(v) {
		return name != null && (name === objectName(v) || name === v['.name']);
	});
}

/* The grid shows the daemon's value of an unset option, not "none". */
function showDefault(o, shown) {
	o.textvalue = function(section_id) {
		var v = this.cfgvalue(section_id);
		return (v == null || v === '') ? (shown != null ? shown : this.placeholder) : String(Array.isArray(v) ? v.join(' ') : v);
	};
}

/* A select showing the daemon's default: choosing it removes the option
 * (LuCI would write every default it shows into the file). */
function defaultNotWritten(o, def) {
	o.default = def;
	o.write = function(section_id, value) {
		if (value == this.default)
			return this.remove(section_id);
		return form.ListValue.prototype.write.apply(this, [ section_id, value ]);
	};
}

/* ListValues show their labels in the grid, not the raw keys. */
function showLabel(o) {
	o.textvalue = function(section_id) {
		var v = this.cfgvalue(section_id), i;
		if (v == null || v === '') v = this.default;
		i = (this.keylist || []).indexOf(String(v));
		return i >= 0 ? this.vallist[i] : (v == null ? null : String(v));
	};
}

/* The placeholder of a name option: what the daemon calls the section without it. */
function namePlaceholder(o, fallback) {
	o.renderWidget = function(section_id) {
		this.placeholder = fallback(uci.get('pathosd', section_id) || { '.name': section_id });
		return form.Value.prototype.renderWidget.apply(this, arguments);
	};
}

/* One UCI option used by several check types with different defaults: the
 * placeholder of the check's type (one form option per UCI option, see
 * guard()). */
function typePlaceholder(o, byType, descByType) {
	o.typePlaceholder = byType;
	o.renderWidget = function(section_id) {
		var t = uci.get('pathosd', section_id, 'type');
		this.placeholder = byType[t] != null ? byType[t] : '';
		/* The rule of this check's type, not of every type (form.js draws
		 * the description after the widget). */
		if (descByType)
			this.description = descByType[t] || '';
		return form.Value.prototype.renderWidget.apply(this, arguments);
	};
}

/* A boolean the file spells 'yes', 'true', 'on' or 'enabled' (the daemon
 * takes them) is shown as ticked, not as the '0' LuCI's checkbox would see. */
function boolLoad(o) {
	var load = o.load;
	o.load = function(section_id) {
		var v = load.apply(this, arguments);
		return isOn(v) ? '1' : (isOff(v) ? '0' : v);
	};
}

/* A select shows a value it does not offer as its first choice, and Save
 * then writes that choice: offer the file's value, flagged, instead.
 * missing: the label of an empty first choice when the option is unset. */
function keepUnknown(o, missing) {
	var keys = (o.keylist || []).slice(), vals = (o.vallist || []).slice();
	var load = o.load, validate = o.validate;

	o.load = function(section_id) {
		var v = load.apply(this, arguments);

		this.keylist = keys.slice();
		this.vallist = vals.slice();
		if (v == null && missing) {
			this.keylist.unshift('');
			this.vallist.unshift(missing);
		}
		else if (v != null && keys.indexOf(String(v)) < 0) {
			this.value(v, _('%s (not a value pathosd takes)').replace('%s', v));
		}
		return v;
	};
	o.validate = function(section_id, value) {
		if (value === '' && missing)
			return missing;
		if (value != null && value !== '' && keys.indexOf(String(value)) < 0)
			return _('%s is not a value pathosd takes: choose one').replace('%s', value);
		return validate.apply(this, arguments);
	};
}

/* A service or interface name: what pathosd takes (1 to 64 characters, no
 * spaces). */
function validateNeedName(section_id, value) {
	if (value == null || value === '')
		return true;
	if (value.length > 64 || /\s/.test(value))
		return _('Expecting a name without spaces, at most 64 characters');
	return true;
}

/* A DynamicList validates only the item being typed, not the items the file
 * has: flag those in the dialog, and refuse to save them. Nor does it refuse
 * to save while the item being typed (not yet added with Enter or +) is
 * invalid: it drops that text, and the dialog closed as if saved; refuse
 * that save too. */
function flagItems(o) {
	var render = o.renderWidget;

	/* ui.DynamicList's input for a new item: its text, if any. */
	function typed(self, section_id) {
		var w = self.getUIElement(section_id),
		    i = w && w.node ? w.node.querySelector('.add-item > input[type="text"]') : null;

		return (i && i.value != null && /\S/.test(i.value)) ? [ i.value ] : [];
	}

	function bad(self, section_id, values) {
		return L.toArray(values).filter(function(v) { return self.validate(section_id, v) !== true; });
	}

	/* The items to save and the text typed for a new one. */
	function badInForm(self, section_id) {
		return bad(self, section_id, L.toArray(self.formvalue(section_id)).concat(typed(self, section_id)));
	}

	o.isValid = function(section_id) {
		return !badInForm(this, section_id).length &&
			form.DynamicList.prototype.isValid.apply(this, arguments);
	};
	o.getValidationError = function(section_id) {
		var b = badInForm(this, section_id);
		/* An older form.js may have no getValidationError(). */
		if (!b.length)
			return form.DynamicList.prototype.getValidationError ? form.DynamicList.prototype.getValidationError.apply(this, arguments) : '';
		return _('%s: %s').replace('%s', b.join(', ')).replace('%s', this.validate(section_id, b[0]));
	};
	o.renderWidget = function(section_id, option_index, cfgvalue) {
		var node = render.apply(this, arguments);
		var b = bad(this, section_id, cfgvalue);

		if (!b.length)
			return node;
		return E('div', {}, [
			node,
			E('div', { 'class': 'cbi-value-description pathosd-bad-items', 'style': 'color:var(--error-color-high, #c00)' }, [
				_('Not valid, remove or correct: %s (%s)').replace('%s', b.join(', ')).replace('%s', this.validate(section_id, b[0]))
			])
		]);
	};
}

/* The value in the file, as its widget shows it. */
function fileValue(o, section_id) {
	var c = o.cfgvalue(section_id);

	if (o instanceof form.Flag)
		return ((c != null ? c : o.default) == o.enabled) ? o.enabled : o.disabled;
	if (o instanceof form.DynamicList)
		return L.toArray(c).map(String);
	if (c == null)
		return '';
	return Array.isArray(c) ? c.join(' ') : String(c);
}

function widgetValue(o, section_id) {
	var f = o.formvalue(section_id);

	if (o instanceof form.DynamicList)
		return L.toArray(f).map(String);
	return f == null ? '' : String(f);
}

function sameValue(a, b) {
	if (Array.isArray(a) || Array.isArray(b))
		return Array.isArray(a) && Array.isArray(b) && a.length == b.length &&
			a.every(function(x, i) { return x === b[i]; });
	return a === b;
}

/* Whether an option this one depends on was changed in this form. */
function controlChanged(o, section_id) {
	return o.deps.some(function(d) {
		return Object.keys(d).some(function(k) {
			var c = k.charAt(0) == '!' ? null : o.section.getOption(k);
			return c != null && !sameValue(fileValue(c, section_id), widgetValue(c, section_id));
		});
	});
}

/*
 * Save writes what the user changed, and only that. form.js's parse() would
 * write a ticked Flag on every save (main's enabled: "set enabled 1"), remove
 * a value equal to its default, and remove the value of every option whose
 * "depends" are not met: with two form options for one UCI option (a port
 * for some check types, another for others) the hidden one deleted what the
 * shown one had. Here an option whose shown value is the file's does
 * nothing, and a hidden option is removed only when what it depends on was
 * changed in this form (a check's type changed: the old type's options go,
 * as the daemon refuses options of another type).
 */
function guard(o) {
	var parse = o.parse;

	o.parse = function(section_id) {
		var active = this.isActive(section_id);

		if (active ? (this.isValid(section_id) && sameValue(fileValue(this, section_id), widgetValue(this, section_id)))
		           : !controlChanged(this, section_id))
			return Promise.resolve();
		return parse.apply(this, arguments);
	};
}

/*
 * A save is all or nothing. form.js's Map.parse() runs every option's
 * parse() at once: each valid one writes into uci.js's changes before an
 * invalid one rejects, and a dismissed dialog leaves those writes for the
 * next save of any form on the page (a VIP's fail_action changed with it).
 * So a form is parsed only when every shown field can be: none is invalid,
 * none that must be filled is empty; else nothing is written.
 */
function allOrNothing(m) {
	var parse = m.parse;

	m.parse = function() {
		var bad = [];

		this.children.forEach(function(s) {
			/* A grid is text: form.js parses nothing of it. */
			if (s instanceof form.GridSection)
				return;
			s.cfgsections().forEach(function(sid) {
				s.children.forEach(function(o) {
					var v;

					if (!o.isActive(sid))
						return;
					v = o.formvalue(sid);
					if (!o.isValid(sid) || (!o.rmempty && !o.optional && (v == null || v === '')))
						bad.push(o.title || o.option);
				});
			});
		});
		if (bad.length)
			return Promise.reject(new Error(_('Not saved, nothing of it was written: correct %s').replace('%s', bad.join(', '))));
		return parse.apply(this, arguments);
	};
}

/*
 * Saving a dialog reloads and redraws the page's form (form.js
 * handleModalSave: load, then reset), which drops what was typed in General
 * settings and not saved yet: an Enabled tick, an API token. What was typed
 * is put back, still unsaved, and checked again.
 */
function keepTyped(s) {
	s.handleModalSave = function() {
		var page = this.map, typed = [];

		page.children.forEach(function(ps) {
			if (ps instanceof form.GridSection)
				return;
			ps.cfgsections().forEach(function(sid) {
				ps.children.forEach(function(o) {
					if (o.getUIElement(sid) && !sameValue(fileValue(o, sid), widgetValue(o, sid)))
						typed.push([ o, sid, o.formvalue(sid) ]);
				});
			});
		});
		return form.GridSection.prototype.handleModalSave.apply(this, arguments).then(function(r) {
			typed.forEach(function(t) {
				var el = t[0].getUIElement(t[1]);

				if (el) {
					el.setValue(t[2]);
					t[0].triggerValidation(t[1]);
				}
			});
			return r;
		});
	};
}

/* Every option of the form: booleans read as the daemon reads them, lists
 * compared as lists, selects keep the file's value, and guard(); the page
 * and each dialog saved all or nothing, and a dialog's save keeps what was
 * typed on the page. */
function finish(m) {
	allOrNothing(m);
	m.children.forEach(function(s) {
		s.children.forEach(function(o) {
			if (o instanceof form.Flag)
				boolLoad(o);
			else if (o instanceof form.ListValue && !o.customLoad)
				keepUnknown(o, o.missingChoice);
			guard(o);
		});
		if (s instanceof form.GridSection) {
			s.addModalOptions = function(dialog) {
				allOrNothing(dialog.map);
			};
			keepTyped(s);
		}
	});
}

/* The grids show text, not fields, yet form.js's checkDepends() looks every
 * option of every row up in the page (a querySelector each): minutes with
 * 1,000 VIPs and their checks. The dialogs, where the fields are, check
 * theirs. */
function noDepends() {
	return false;
}

/* A message the user sees wherever the page is scrolled. */
function showMessage(title, body, buttons) {
	ui.showModal(title, [].concat(body, [
		E('div', { 'class': 'right' }, (buttons || []).concat([
			E('button', { 'class': 'cbi-button', 'click': ui.hideModal }, [ _('Dismiss') ])
		]))
	]));
}

/* Named sections cannot be added with the name of an existing section:
 * uci.js would open that section as a new, empty one, and saving would
 * overwrite its options. */
function refuseTakenNames(s) {
	s.handleAdd = function(ev, name) {
		var taken = (name != null && name !== '') ? uci.get('pathosd', name) : null;

		if (taken) {
			showMessage(_('Not added'), [
				E('p', { 'class': 'pathosd-name-taken' }, [
					_('/etc/config/pathosd has a %s section named %s already; section names are unique in the file. Choose another name (the Name option in the dialog can then hold any name, with - or . too).')
						.replace('%s', taken['.type']).replace('%s', name)
				])
			]);
			return Promise.resolve();
		}
		return form.GridSection.prototype.handleAdd.apply(this, arguments);
	};
}

/* A new check's section name: its VIP and type (web_http), unique, and a
 * checks_policy identifier, so dialog titles and the daemon's errors name
 * what the page shows. */
function newCheckName(vip, type) {
	var base = (String(vip) + '_' + type).replace(/[^A-Za-z0-9_]/g, '_');
	var name, n = 2;

	if (!/^[A-Za-z_]/.test(base))
		base = '_' + base;
	name = base;
	while (uci.get('pathosd', name) != null || uci.sections('pathosd', 'check').some(function(c) {
		return c.vip === vip && checkName(c) === name;
	}))
		name = base + '_' + n++;
	return name;
}

/*
 * A daemon error in the page's words: its section as the page shows it (a
 * VIP's or neighbor's Name, a check's name and VIP: vip 'api' is "VIP
 * api-v2", @check[5] "Check tcp of VIP web"), its option by the field's
 * title. The error's own text stays as the item's tooltip. @TYPE[N] counts
 * the sections of that type in the file's order, which uci.js keeps.
 */
function describeError(m, e) {
	var at = /^@(\w+)\[(\d+)\]$/.exec(e.section || ''), named = /^(\w+) '([^']*)'$/.exec(e.section || '');
	var cfg = /^config (\w+)$/.exec(e.section || ''), type = (at || named || cfg || [])[1], s = null, where, o;
	var WHOLE = { vip: _('VIPs'), neighbor: _('BGP neighbors'), check: _('Checks') };

	if (!type)
		return String(e.text);
	if (at)
		s = uci.sections('pathosd', type)[+at[2]] || null;
	else if (named)
		s = uci.get('pathosd', named[2]);
	if (s && s['.type'] !== type)
		s = null;
	where = type === 'pathosd' ? _('General settings')
		: !s ? (WHOLE[type] || e.section)
		: type === 'check' ? _('Check %s of VIP %s').replace('%s', checkName(s)).replace('%s', s.vip)
		: (type === 'vip' ? _('VIP %s') : _('Neighbor %s')).replace('%s', objectName(s) +
			/* Two of one name (which is the error): which one. */
			(uci.sections('pathosd', type).filter(function(x) { return objectName(x) === objectName(s); }).length > 1
				? ' ' + _('(section %s)').replace('%s', s['.name']) : ''));
	m.children.forEach(function(sec) {
		if (sec.sectiontype === type && e.option)
			o = sec.getOption(e.option);
	});
	return where + (e.option ? ' \u203a ' + (o ? o.title : e.option) : '') + ': ' + e.message;
}

/* What a fresh install lacks before pathosd can start, or nothing. */
function start() {
	if (uci.sections('pathosd', 'neighbor').length && uci.sections('pathosd', 'vip').length)
		return E([]);
	return E('div', { 'class': 'alert-message notice pathosd-start' }, [
		E('p', [ _('To start, pathosd needs the local AS and router ID (General settings), at least one BGP neighbor and at least one VIP with a check or "Always announce". Then tick Enabled and Save & Apply: the settings are checked by pathosd before anything is applied.') ])
	]);
}

/* VIPs and checks per page of their grid. */
var PAGE_ROWS = 50;

/*
 * A grid of many rows (1,000 VIPs drew a page 97,000 px tall) gets a search
 * and pages, as the Status page has: cfgsections() gives form.js only the
 * rows of this page that match (so only they are loaded and drawn), and
 * the search and Previous/Next draw this grid again, not the page. text(s)
 * is what the search looks in. The grid's title is drawn above the search.
 */
function pageable(s, what, text) {
	var cfgsections = s.cfgsections, render = s.render;

	s.query = { search: '', offset: 0 };
	s.hidetitle = true;

	s.cfgsections = function() {
		var q = this.query, needle = q.search.toLowerCase();
		var ids = cfgsections.apply(this, arguments).filter(function(sid) {
			return !needle || text(uci.get('pathosd', sid) || { '.name': sid }).toLowerCase().indexOf(needle) >= 0;
		});

		this.matched = ids.length;
		if (q.offset >= ids.length)
			q.offset = Math.max(0, Math.floor((ids.length - 1) / PAGE_ROWS) * PAGE_ROWS);
		return ids.slice(q.offset, q.offset + PAGE_ROWS);
	};

	s.renderPager = function() {
		var q = this.query, self = this, n = Math.min(PAGE_ROWS, this.matched - q.offset);
		var go = function(offset) {
			return function() {
				q.offset = offset;
				return self.refreshGrid();
			};
		};

		return [
			E('span', { 'class': 'pathosd-range' }, [ n > 0
				? _('%s %d\u2013%d of %d').replace('%s', what).replace('%d', q.offset + 1).replace('%d', q.offset + n).replace('%d', this.matched)
				: _('No match') ]),
			' ',
			E('button', { 'class': 'cbi-button pathosd-prev', 'disabled': q.offset > 0 ? null : '',
				'click': go(Math.max(0, q.offset - PAGE_ROWS)) }, [ _('Previous') ]),
			' ',
			E('button', { 'class': 'cbi-button pathosd-next', 'disabled': q.offset + PAGE_ROWS < this.matched ? null : '',
				'click': go(q.offset + PAGE_ROWS) }, [ _('Next') ])
		];
	};

	s.render = function() {
		var self = this;

		return render.apply(this, arguments).then(function(el) {
			self.gridBody = E('div', { 'class': 'pathosd-grid-body' }, [ el ]);
			self.pagerNode = E('span', { 'class': 'pathosd-pager' }, self.renderPager());
			return E('div', { 'class': 'cbi-section pathosd-grid' }, [
				E('h3', [ self.title ]),
				E('div', { 'class': 'cbi-section-create pathosd-filters' }, [
					E('input', {
						'type': 'search',
						'class': 'cbi-input-text pathosd-find',
						'placeholder': _('Search'),
						'value': self.query.search,
						'input': function(ev) {
							self.query.search = ev.target.value;
							self.query.offset = 0;
							return self.refreshGrid();
						}
					}),
					' ',
					self.pagerNode
				]),
				self.gridBody
			]);
		});
	};

	s.refreshGrid = function() {
		var self = this;

		return Promise.resolve(this.load()).then(function() {
			return render.call(self);
		}).then(function(el) {
			dom.content(self.gridBody, el);
			dom.content(self.pagerNode, self.renderPager());
		});
	};
}

/* The chosen value of a <select> (the first option until one is chosen). */
function selectValue(sel) {
	var first;

	if (sel.value != null && sel.value !== '')
		return sel.value;
	first = (sel.children || sel.options || [])[0];
	return first ? (first.value != null ? first.value : first.attrs.value) : null;
}

/* The check defaults of the daemon (schema/pathosd-config-v1.schema.json). */
var CHECK_DEFAULTS = { interval: '1s', timeout: '100ms', rise: '1', fall: '3' };

/*
 * Type-specific check options: [ option, widget, title, types, extra ].
 * Exactly one form option per UCI option: one used by several check types
 * depends on each of them, and a default that differs by type is the
 * placeholder of the check's type (extra.typePlaceholder), and a rule that
 * differs by type the description of that type (extra.typeDescription).
 * Placeholders and defaults are the daemon's.
 */
var CHECK_OPTIONS = [
	[ 'url', 'Value', _('URL'), [ 'http', 'https' ], { placeholder: '/', description: _('A path (requested from the VIP address) or a full URL') } ],
	[ 'host', 'Value', _('Host'), [ 'http', 'https', 'tcp', 'udp', 'grpc' ], { datatype: 'host', description: _('Empty: the VIP address') } ],
	[ 'port', 'Value', _('Port'), [ 'http', 'https', 'dns', 'tcp', 'udp', 'grpc' ], { datatype: 'port', typePlaceholder: { dns: '53' }, validate: validateCheckPort,
		typeDescription: { http: _('Empty: the port of the URL (80 for http://)'), https: _('Empty: the port of the URL (443 for https://)'),
			dns: _('Empty: 53'), tcp: _('Required'), udp: _('Required'), grpc: _('Required') } } ],
	[ 'object', 'Value', _('ubus object'), [ 'ubus' ], { description: _('Required. As ubus list shows it, for example network.interface.wan') } ],
	[ 'method', 'Value', _('Method'), [ 'http', 'https', 'grpc', 'ubus' ], { typePlaceholder: { http: 'GET', https: 'GET' },
		typeDescription: { http: _('The request method; empty: GET'), https: _('The request method; empty: GET'),
			grpc: _('A unary method /package.Service/Method; empty: the gRPC health checking protocol (grpc.health.v1)'),
			ubus: _('Required. The method to call, for example status') } } ],
	[ 'args', 'Value', _('Arguments (JSON)'), [ 'ubus' ], { validate: validateJsonObject, description: _('A JSON object, for example {"name": "dnsmasq"}; empty: none') } ],
	[ 'socket', 'Value', _('ubus socket'), [ 'ubus' ], { placeholder: '/var/run/ubus/ubus.sock' } ],
	[ 'header', 'DynamicList', _('Request headers'), [ 'http', 'https' ], { description: _('Name: value, for example Host: www.example.com') } ],
	[ 'response_code', 'DynamicList', _('Accepted status codes'), [ 'http', 'https' ], { placeholder: '200', description: _('Codes or ranges such as 200-299; empty: 200 only') } ],
	[ 'response_text', 'Value', _('Response contains'), [ 'http', 'https', 'ubus' ] ],
	[ 'response_regex', 'Value', _('Response matches regex'), [ 'http', 'https', 'ubus' ] ],
	[ 'response_jq', 'Value', _('Response JSON expression'), [ 'http', 'https', 'ubus' ], { description: _('For example .ready == true') } ],
	[ 'proxy', 'Value', _('Forward proxy'), [ 'http', 'https' ], { description: _('For example http://127.0.0.1:3128') } ],
	[ 'keep_alive', 'Flag', _('Reuse the connection'), [ 'http', 'https' ] ],
	[ 'tls', 'Flag', _('TLS'), [ 'grpc' ] ],
	[ 'tls_insecure', 'Flag', _('Skip certificate verification'), [ 'http', 'https', 'grpc' ] ],
	[ 'tls_ca_cert', 'Value', _('CA certificate file'), [ 'http', 'https', 'grpc' ], { datatype: 'file' } ],
	[ 'tls_server_name', 'Value', _('TLS server name'), [ 'http', 'https', 'grpc' ], { datatype: 'hostname' } ],
	[ 'tls_client_cert', 'Value', _('Client certificate file'), [ 'http', 'https' ], { datatype: 'file' } ],
	[ 'tls_client_key', 'Value', _('Client key file'), [ 'http', 'https' ], { datatype: 'file' } ],
	[ 'query', 'DynamicList', _('Names to query'), [ 'dns' ], { description: _('For example openwrt.lan.') } ],
	[ 'resolver', 'Value', _('Resolver'), [ 'dns' ], { datatype: 'host', description: _('Empty: the VIP address') } ],
	[ 'query_type', 'ListValue', _('Query type'), [ 'dns' ], { values: [ 'A', 'AAAA', 'CNAME', 'MX', 'TXT', 'SRV', 'PTR', 'NS', 'SOA' ], default: 'A' } ],
	[ 'expected_rcode', 'ListValue', _('Expected response code'), [ 'dns' ], { values: [ 'NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED' ], default: 'NOERROR' } ],
	[ 'expected_answer', 'DynamicList', _('Expected answers'), [ 'dns' ] ],
	[ 'expected_match', 'ListValue', _('Expected answers must'), [ 'dns' ], { values: [ 'any', 'all' ], default: 'any' } ],
	[ 'dst_ip', 'Value', _('Address to ping'), [ 'ping' ], { datatype: 'ipaddr', description: _('Empty: the VIP address') } ],
	[ 'src_ip', 'Value', _('Source address'), [ 'ping' ], { datatype: 'ipaddr' } ],
	[ 'privileged', 'Flag', _('Raw ICMP socket'), [ 'ping' ] ],
	[ 'count', 'Value', _('Echo requests per check'), [ 'ping' ], { datatype: 'uinteger', placeholder: '1' } ],
	[ 'ping_interval', 'Value', _('Time between echo requests'), [ 'ping' ], { validate: validateDuration, placeholder: '100ms' } ],
	[ 'max_loss_ratio', 'Value', _('Highest loss ratio that passes'), [ 'ping' ], { datatype: 'range(0,1)', placeholder: '0' } ],
	[ 'send', 'Value', _('Send'), [ 'tcp' ] ],
	[ 'expect', 'Value', _('Expect'), [ 'tcp', 'udp' ] ],
	[ 'payload', 'Value', _('Payload'), [ 'udp' ] ],
	[ 'payload_hex', 'Value', _('Payload (hex)'), [ 'udp' ] ],
	[ 'service', 'Value', _('Health service name'), [ 'grpc' ], { description: _('Empty: the whole server') } ],
	[ 'ok_code', 'DynamicList', _('Accepted gRPC codes'), [ 'grpc' ], { placeholder: 'OK' } ],
	[ 'metadata', 'DynamicList', _('Metadata'), [ 'grpc' ], { description: _('key: value, for example authorization: Bearer token') } ],
	[ 'command', 'Value', _('Command'), [ 'exec' ], { datatype: 'file' } ],
	[ 'arg', 'DynamicList', _('Arguments'), [ 'exec' ] ]
];

function addCheckOption(s, spec) {
	var o = s.taboption('type', form[spec[1]], spec[0], spec[2]);
	var extra = spec[4] || {};

	spec[3].forEach(function(t) {
		o.depends('type', t);
	});

	o.modalonly = true;

	if (spec[1] === 'ListValue') {
		extra.values.forEach(function(v) {
			o.value(v);
		});
	}

	if (extra.default) defaultNotWritten(o, extra.default);
	if (extra.datatype) o.datatype = extra.datatype;
	if (extra.placeholder) o.placeholder = extra.placeholder;
	if (extra.typePlaceholder) typePlaceholder(o, extra.typePlaceholder, extra.typeDescription);
	if (extra.description) o.description = extra.description;
	if (extra.validate) o.validate = extra.validate;

	return o;
}

/* Settings a reload took but that apply only after a restart (hooks,
 * api.listen, …): Save & Apply said "applied", and nothing else would say
 * that they do not run yet. */
function renderNeedsRestart(r) {
	var n = (r && r.result !== 'rejected' && Array.isArray(r.needs_restart)) ? r.needs_restart : [];

	if (!n.length)
		return E([]);
	return E('div', { 'class': 'alert-message warning pathosd-reload-restart' }, [
		E('h4', [ _('Some settings apply only after a restart of pathosd') ]),
		E('p', [ _('Reload at %s took them, but pathosd runs the previous ones until it restarts (/etc/init.d/pathosd restart, or System → Startup): %s')
			.replace('%s', localTime(r.time)).replace('%s', n.join(', ')) ])
	]);
}

/* A rejected reload, or one applied only in part, until a later one is
 * applied (ubus status last_reload); and settings waiting for a restart. */
function renderReload(status) {
	var r = status ? status.last_reload : null;
	var partial = r && r.result === 'partially_applied';

	if (!r || (r.result !== 'rejected' && !partial))
		return renderNeedsRestart(r);

	if (partial)
		return E('div', { 'class': 'alert-message warning pathosd-reload-partial' }, [
			E('h4', [ _('pathosd applied the configuration only in part') ]),
			E('p', [ _('Reload at %s did not apply:').replace('%s', localTime(r.time)) ]),
			E('ul', (Array.isArray(r.errors) ? r.errors : []).map(function(e) {
				return E('li', [ String(e) ]);
			})),
			E('p', [ _('The rest of the configuration runs. Fix the settings below and apply again; see also logread -e pathosd.') ]),
			renderNeedsRestart(r)
		]);

	return E('div', { 'class': 'alert-message danger pathosd-reload-rejected' }, [
		E('h4', [ _('pathosd rejected the configuration: it still runs the previous one') ]),
		E('p', [ _('Reload at %s failed with:').replace('%s', localTime(r.time)) ]),
		E('ul', (Array.isArray(r.errors) ? r.errors : []).map(function(e) {
			return E('li', [ String(e) ]);
		})),
		E('p', [ _('Fix the settings below and apply again; see also logread -e pathosd.') ])
	]);
}

function localTime(t) {
	var d = new Date(t);
	return isNaN(d.getTime()) ? String(t) : d.toLocaleString();
}

return view.extend({
	/* [ loaded, status ]: the configuration is loaded only when rpcd's reply
	 * to uci get of it is known to fit; else why not (this.unloaded). */
	load: function() {
		var self = this;

		return Promise.all([
			callStagedSize().then(function(r) { return r; }, function(err) { return { trouble: err }; }),
			L.resolveDefault(callStatus(0), null)
		]).then(function(res) {
			var size = res[0];

			if (size.trouble)
				self.unloaded = _('LuCI could not measure /etc/config/pathosd before loading it: %s Loading one over 1 MiB would stop rpcd, so the form is not shown.')
					.replace('%s', common.pluginTrouble(size.trouble));
			else if (size.error)
				self.unloaded = _('/etc/config/pathosd cannot be read: %s').replace('%s', size.error);
			else if (!(size.uci_get <= MAX_UCI_GET))
				self.unloaded = _('/etc/config/pathosd is too large to edit here: %d sections, %d kB. LuCI loads the whole file through rpcd, in one ubus reply of about %d kB for this one; past 1 MiB rpcd stops and every LuCI session ends, so this page loads at most %d kB. Edit it on the router with uci or an editor: pathosd validate --config /etc/config/pathosd checks it (uci export pathosd | pathosd validate --config - with uncommitted changes), /etc/init.d/pathosd reload applies it. The Status page works at any size.')
					.replace('%d', size.sections).replace('%d', Math.ceil(size.bytes / 1024))
					.replace('%d', Math.ceil(size.uci_get / 1024)).replace('%d', MAX_UCI_GET / 1024);
			if (self.unloaded)
				return [ false, res[1] ];
			return uci.load('pathosd').then(function() {
				return [ true, res[1] ];
			});
		});
	},

	/* The page's message: at the top of the page, and as a dialog. */
	notice: function(node) {
		dom.content(this.noticeNode, node);
	},

	/*
	 * Save: the page's form (LuCI's would show "Save error" and leave an
	 * uncaught error); a value the form cannot take is said on the page and
	 * in a dialog. Resolves to whether it saved.
	 */
	handleSave: function(ev) {
		var self = this;

		return this.map.save(null, true).then(function() {
			return true;
		}, function(err) {
			var box = E('div', { 'class': 'alert-message danger pathosd-not-saved' }, [
				E('h4', [ _('Not saved') ]),
				E('p', [ String((err && err.message) || err) ])
			]);

			self.notice(box);
			showMessage(_('Not saved'), [ E('p', [ String((err && err.message) || err) ]) ]);
			return false;
		});
	},

	/* Save & Apply: save, then apply (checked by common.guardApply). */
	handleSaveApply: function(ev, mode) {
		var self = this;

		return this.handleSave(ev).then(function(saved) {
			if (!saved)
				return;
			self.notice(null);
			return ui.changes.apply(mode == '0');
		});
	},

	updateReload: function(status) {
		dom.content(this.reloadNode, renderReload(status));
	},

	render: function(data) {
		var self = this;
		var m, s, o;

		this.reloadNode = E('div', { 'class': 'pathosd-reload' });
		this.noticeNode = E('div', { 'class': 'pathosd-notice' });
		this.updateReload(data[1]);
		common.guardApply(function(res) {
			self.notice(common.refusal(res, self.describe));
		}, function(e) {
			return self.describe(e);
		});
		/* Once the form is drawn, errors are told in its words. */
		this.describe = function(e) {
			return self.map ? describeError(self.map, e) : String(e.text);
		};
		/* The daemon reloads a second or so after Apply: keep watching. */
		poll.add(function() {
			return L.resolveDefault(callStatus(0), null).then(function(st) {
				self.updateReload(st);
			});
		}, 5);

		if (!data[0]) {
			this.map = null;
			this.handleSave = this.handleSaveApply = this.handleReset = null;
			return E('div', { 'class': 'cbi-map' }, [
				E('h2', [ _('pathosd') ]),
				this.reloadNode,
				E('div', { 'class': 'alert-message warning pathosd-unloaded' }, [ E('p', [ this.unloaded ]) ])
			]);
		}

		m = new form.Map('pathosd', _('pathosd'),
			_('Health-checked VIP announcements over BGP. Nothing runs until "Enabled" is set; Save & Apply applies only a configuration pathosd takes, and a reload pathosd rejected is shown here.'));

		/* config pathosd 'main' */
		s = m.section(form.NamedSection, 'main', 'pathosd', _('General settings'));
		s.anonymous = true;
		s.addremove = false;
		s.tab('general', _('General'));
		s.tab('bgp', _('BGP'));
		s.tab('api', _('API and logging'));
		s.tab('otel', _('OpenTelemetry'));
		s.tab('hooks', _('Hooks'));

		o = s.taboption('general', form.Flag, 'enabled', _('Enabled'));
		o.rmempty = false;

		/* Required, but left to pathosd's check: an empty field is saved
		 * (as no option) and Save & Apply then says what pathosd says. */
		o = s.taboption('general', form.Value, 'asn', _('Local AS'), _('Required.'));
		o.datatype = 'range(1,4294967295)';

		o = s.taboption('general', form.Value, 'router_id', _('Router ID'));
		o.datatype = 'ip4addr';

		o = s.taboption('general', form.Value, 'local_address', _('Local address'),
			_('Source address of the sessions and IPv4 next hop of the VIP routes; the router ID when empty.'));
		o.datatype = 'ipaddr';

		o = s.taboption('general', form.Value, 'local_address_ipv6', _('Local IPv6 address'),
			_('IPv6 next hop; required for IPv6 VIPs.'));
		o.datatype = 'ip6addr';

		o = s.taboption('bgp', form.Value, 'listen_address', _('Listen address'));
		o.datatype = 'ipaddr';

		o = s.taboption('bgp', form.Value, 'listen_port', _('Listen port'),
			_('-1: never listen (pathosd dials every neighbor; passive neighbors then cannot connect).'));
		o.datatype = 'range(-1,65535)';
		o.placeholder = '179';

		o = s.taboption('bgp', form.Value, 'hold_time', _('Hold time'));
		o.validate = validateDuration;
		o.placeholder = '90s';

		o = s.taboption('bgp', form.Value, 'keepalive_time', _('Keepalive time'),
			_('Empty: a third of the hold time.'));
		o.validate = validateDuration;

		o = s.taboption('bgp', form.Flag, 'graceful_restart', _('Graceful restart'));
		o.default = '1';

		o = s.taboption('bgp', form.Value, 'shutdown_drain', _('Shutdown drain'),
			_('Time between withdrawing the routes and closing the sessions on stop; keep it under 4s (procd kills after 5s).'));
		o.validate = validateDuration;
		o.placeholder = '0s';

		o = s.taboption('bgp', form.Flag, 'graceful_shutdown', _('Graceful shutdown community'),
			_('Pessimized routes, and on stop every route during the shutdown drain, carry GRACEFUL_SHUTDOWN (65535:0, RFC 8326): peers that honour it lower the preference at once. At stop only with a shutdown drain.'));

		o = s.taboption('api', form.Value, 'api_listen', _('HTTP API listen address'),
			_('Reads are open to anyone who can reach it; beyond loopback, set an API token for drain and trigger.'));
		o.placeholder = '127.0.0.1:59179';

		o = s.taboption('api', form.Value, 'api_token', _('API token'),
			_('Required as "Authorization: Bearer TOKEN" by drain and trigger requests; empty: none.'));
		o.password = true;
		o.validate = validateApiToken;

		o = s.taboption('api', form.Value, 'ubus_socket', _('ubus socket'));
		o.placeholder = '/var/run/ubus/ubus.sock';

		o = s.taboption('api', form.ListValue, 'log_level', _('Log level'));
		o.value('error');
		o.value('warn');
		o.value('info');
		o.value('debug');
		defaultNotWritten(o, 'info');

		o = s.taboption('otel', form.Value, 'otel_endpoint', _('OTLP collector'),
			_('For example http://192.168.1.10:4318 (OTLP/HTTP), or https://; empty: no export. Metrics are sent every interval.'));

		o = s.taboption('otel', form.Flag, 'otel_enabled', _('Export'),
			_('Off: nothing is exported, whatever the collector.'));
		o.default = '1';

		o = s.taboption('otel', form.Value, 'otel_service_name', _('Service name'));
		o.placeholder = 'pathosd';

		o = s.taboption('otel', form.DynamicList, 'otel_header', _('Headers'),
			_('Name: value, for example an API key as X-Api-Key: %{OTEL_KEY}'));

		o = s.taboption('otel', form.Flag, 'otel_insecure', _('Skip certificate verification'),
			_('https:// only.'));

		o = s.taboption('otel', form.Value, 'otel_metrics_interval', _('Metrics interval'));
		o.validate = validateDuration;
		o.placeholder = '60s';

		o = s.taboption('otel', form.Value, 'otel_traces_sample_ratio', _('Health check span ratio'),
			_('Share of health_check spans exported, 0 to 1; route change spans are always exported.'));
		o.datatype = 'and(ufloat,max(1))';
		o.placeholder = '0.01';

		o = s.taboption('otel', form.ListValue, 'log_otel_level', _('Exported log level'));
		o.value('', _('as the log level'));
		o.value('error');
		o.value('warn');
		o.value('info');
		o.value('debug');

		o = s.taboption('hooks', form.Value, 'hooks_dir', _('Hooks directory'),
			_('Scripts run on each VIP transition, in file-name order, with ACTION, VIP, PREFIX, STATE, FROM, REASON and SEQ in the environment. Empty: none.'));
		o.placeholder = '/etc/hotplug.d/pathosd';

		o = s.taboption('hooks', form.Value, 'hook_timeout', _('Hook timeout'),
			_('A script still running then is killed with its children.'));
		o.validate = validateHookTimeout;
		o.placeholder = '10s';

		o = s.taboption('hooks', form.Value, 'hook_queue', _('Hook queue'),
			_('Transitions waiting for the scripts; more are dropped and counted.'));
		o.datatype = 'range(1,10000)';
		o.placeholder = '64';

		/* config neighbor 'NAME' */
		s = m.section(form.GridSection, 'neighbor', _('BGP neighbors'),
			_('pathosd needs at least one neighbor, the router it announces the VIPs to (for example BIRD on this router).'));
		s.checkDepends = noDepends;
		s.anonymous = false;
		s.addremove = true;
		s.nodescriptions = true;
		s.sectiontitle = function(section_id) {
			return objectName(uci.get('pathosd', section_id) || { '.name': section_id });
		};
		s.tab('general', _('General'));
		s.tab('bfd', _('BFD'));
		refuseTakenNames(s);

		o = s.taboption('general', form.Flag, 'enabled', _('Enabled'));
		o.default = '1';

		o = s.taboption('general', form.Value, 'name', _('Name'),
			_('Empty: the section name. Needed for names with - or . (not allowed in UCI section names).'));
		o.validate = validateObjectName;
		o.modalonly = true;
		namePlaceholder(o, objectName);

		o = s.taboption('general', form.Value, 'address', _('Address'));
		o.datatype = 'ipaddr';
		o.rmempty = false;

		o = s.taboption('general', form.Value, 'peer_asn', _('Peer AS'));
		o.datatype = 'range(1,4294967295)';
		o.rmempty = false;

		o = s.taboption('general', form.Value, 'port', _('Port'));
		o.datatype = 'port';
		o.placeholder = '179';
		showDefault(o);

		o = s.taboption('general', form.Flag, 'passive', _('Passive'),
			_('Wait for the neighbor to connect (needs a listen port other than -1 under General settings).'));

		/* The daemon: required unless the option is 0. */
		o = s.taboption('general', form.Flag, 'required', _('Required'),
			_('/readyz fails while this session is down.'));
		o.default = '1';

		o = s.taboption('general', form.Value, 'local_address', _('Local address'));
		o.datatype = 'ipaddr';
		o.modalonly = true;

		o = s.taboption('general', form.Value, 'auth_password', _('TCP MD5 password'));
		o.password = true;
		o.modalonly = true;

		o = s.taboption('general', form.Flag, 'enable_multihop', _('eBGP multihop'));
		o.modalonly = true;

		o = s.taboption('general', form.Value, 'multihop_ttl', _('Multihop TTL'), _('Empty: 255.'));
		o.datatype = 'range(2,255)';
		o.depends('enable_multihop', '1');
		o.modalonly = true;

		o = s.taboption('general', form.Flag, 'ttl_security', _('TTL security (GTSM)'));
		o.modalonly = true;

		o = s.taboption('general', form.Value, 'hold_time', _('Hold time'), _('Empty: as in General settings.'));
		o.validate = validateDuration;
		o.modalonly = true;

		o = s.taboption('general', form.Value, 'keepalive_time', _('Keepalive time'), _('Empty: as in General settings.'));
		o.validate = validateDuration;
		o.modalonly = true;

		/* extended_next_hop (settings.rs): RFC 8950, IPv4 routes with the IPv6 next hop. */
		o = s.taboption('general', form.Flag, 'extended_next_hop', _('Extended next hop'),
			_('Send IPv4 VIPs with the IPv6 next hop when the peer agrees (RFC 8950), e.g. over a single IPv6 session on an IPv6-only router.'));
		o.modalonly = true;

		/* role, require_role (validate/bgp.rs): RFC 9234, eBGP only; strict mode needs a role. */
		o = s.taboption('general', form.ListValue, 'role', _('BGP role'),
			_('This router\'s role towards the peer (RFC 9234), sent in the OPEN; the peer\'s must match. Routes to a customer, peer or RS client carry Only-to-Customer.'));
		o.value('', _('none'));
		o.value('provider', _('provider (the peer is our customer)'));
		o.value('customer', _('customer (the peer is our provider)'));
		o.value('peer', _('peer'));
		o.value('rs', _('route server'));
		o.value('rs-client', _('route server client'));
		o.modalonly = true;
		o.validate = function(section_id, value) {
			if ((value == null || value === '') && isOn(this.section.formvalue(section_id, 'require_role')))
				return _('Choose a role: Require peer role checks the peer\'s role against it');
			return true;
		};

		o = s.taboption('general', form.Flag, 'require_role', _('Require peer role'),
			_('Refuse a peer that sends no role (strict mode, BIRD\'s require roles).'));
		o.modalonly = true;

		/* send_hold_time (validate/bgp.rs): RFC 9687, more than the hold time; 0 = off. */
		o = s.taboption('general', form.Value, 'send_hold_time', _('Send hold time'),
			_('Close the session when the peer takes none of our data for this long (RFC 9687). Empty: the greater of 8 minutes and twice the hold time; 0: off; else more than the hold time.'));
		o.validate = validateSendHoldTime;
		o.placeholder = '8m';
		o.modalonly = true;

		o = s.taboption('general', form.Value, 'error_wait_min', _('Error wait (min)'),
			_('Idle time before reconnecting after a first error; it doubles on each further error.'));
		o.validate = validateErrorWait;
		o.placeholder = '1s';
		o.modalonly = true;

		o = s.taboption('general', form.Value, 'error_wait_max', _('Error wait (max)'),
			_('Cap of the doubling; a session that stayed up this long is redialled at once.'));
		o.validate = validateErrorWait;
		o.placeholder = '60s';
		o.modalonly = true;

		o = s.taboption('general', form.ListValue, 'graceful_restart', _('Graceful restart'));
		o.value('', _('as in General settings'));
		o.value('1', _('on'));
		o.value('0', _('off'));
		o.modalonly = true;
		boolLoad(o);

		/* BFD (RFC 5880) beside the session: uci_map.rs bfd_*, validate/bgp.rs. */
		o = s.taboption('bfd', form.Flag, 'bfd', _('BFD'),
			_('Run a BFD session with this neighbor: when it goes down, pathosd ends the BGP session at once (Cease, BFD Down) instead of waiting for the hold time. The neighbor must run BFD too (BIRD: a protocol bfd, and bfd on in its protocol bgp). Needs a source address: Local address here or under General settings.'));
		o.modalonly = true;

		o = s.taboption('bfd', form.Value, 'bfd_desired_minimum_tx_interval', _('BFD transmit interval'),
			_('Fastest this router sends once the BFD session is up, 10ms to 60s (1s until it is up).'));
		o.validate = validateBfdInterval;
		o.placeholder = '300ms';
		o.depends('bfd', '1');
		o.modalonly = true;

		o = s.taboption('bfd', form.Value, 'bfd_required_minimum_receive', _('BFD receive interval'),
			_('Fastest the neighbor may send, 10ms to 60s.'));
		o.validate = validateBfdInterval;
		o.placeholder = '300ms';
		o.depends('bfd', '1');
		o.modalonly = true;

		o = s.taboption('bfd', form.Value, 'bfd_detection_multiplier', _('BFD detection multiplier'),
			_('Intervals without a packet before the neighbor is declared down, 2 to 255.'));
		o.datatype = 'range(2,255)';
		o.placeholder = '3';
		o.depends('bfd', '1');
		o.modalonly = true;

		o = s.taboption('bfd', form.ListValue, 'bfd_multihop', _('BFD multihop'),
			_('Multihop BFD (RFC 5883, UDP port 4784) or single hop (RFC 5881, port 3784); the neighbor must use the same.'));
		o.value('', _('automatic: multihop with eBGP multihop or a loopback address'));
		o.value('1', _('multihop'));
		o.value('0', _('single hop'));
		o.depends('bfd', '1');
		o.modalonly = true;
		boolLoad(o);

		/* config vip 'NAME' */
		s = m.section(form.GridSection, 'vip', _('VIPs'),
			_('pathosd needs at least one VIP, with a check (below) or "Always announce". When unhealthy, a VIP is by default pessimized and stays announced (lower priority); choose withdraw in its Policy tab to stop announcing it.'));
		s.checkDepends = noDepends;
		s.anonymous = false;
		s.addremove = true;
		s.nodescriptions = true;
		s.sectiontitle = function(section_id) {
			return objectName(uci.get('pathosd', section_id) || { '.name': section_id });
		};
		s.tab('general', _('General'));
		s.tab('policy', _('Policy'));
		refuseTakenNames(s);
		pageable(s, _('VIPs'), function(v) {
			return [ objectName(v), v['.name'], v.prefix ].join(' ');
		});

		/* A VIP's checks would be rejected without it: say so, and offer to
		 * delete them with it. */
		s.handleRemove = function(section_id, ev) {
			var section = this;
			var v = uci.get('pathosd', section_id) || { '.name': section_id };
			var name = objectName(v);
			var own = uci.sections('pathosd', 'check').filter(function(c) {
				return c.vip === name || c.vip === section_id;
			});

			if (!own.length)
				return form.GridSection.prototype.handleRemove.apply(this, arguments);

			showMessage(_('Delete VIP %s').replace('%s', name), [
				E('p', { 'class': 'pathosd-vip-checks' }, [
					N_(own.length, 'VIP %s has a check: %s. pathosd rejects a check whose VIP is gone, so Save & Apply would fail until it is deleted or given another VIP.',
						'VIP %s has %d checks: %s. pathosd rejects a check whose VIP is gone, so Save & Apply would fail until they are deleted or given another VIP.')
						.replace('%s', name).replace('%d', own.length).replace('%s', own.map(checkName).join(', '))
				])
			], [
				E('button', {
					'class': 'cbi-button cbi-button-negative important pathosd-delete-all',
					'click': function() {
						own.forEach(function(c) { uci.remove('pathosd', c['.name']); });
						uci.remove('pathosd', section_id);
						ui.hideModal();
						return section.map.save(null, true);
					}
				}, [ N_(own.length, 'Delete the VIP and its check', 'Delete the VIP and its %d checks').replace('%d', own.length) ]),
				' ',
				E('button', {
					'class': 'cbi-button cbi-button-negative pathosd-delete-vip',
					'click': function() {
						uci.remove('pathosd', section_id);
						ui.hideModal();
						return section.map.save(null, true);
					}
				}, [ _('Delete the VIP only') ]),
				' '
			]);
			return Promise.resolve();
		};

		o = s.taboption('general', form.Flag, 'enabled', _('Enabled'));
		o.default = '1';

		o = s.taboption('general', form.Value, 'name', _('Name'),
			_('Empty: the section name. Needed for names with - or . (not allowed in UCI section names); checks name their VIP by either.'));
		o.validate = validateObjectName;
		o.modalonly = true;
		namePlaceholder(o, objectName);

		/* One prefix or several (an IPv4 and an IPv6 one, say): pathosd
		 * announces and withdraws them together, on the VIP's one set of checks. */
		o = s.taboption('general', form.DynamicList, 'prefix', _('Prefixes'),
			_('The addresses to announce with their length, usually /32 (IPv4) or /128 (IPv6); a network must be written without host bits. Several (up to 16, IPv4 and IPv6 together) are announced and withdrawn together.'));
		o.validate = validatePrefix;
		o.rmempty = false;
		flagItems(o);

		o = s.taboption('general', form.Flag, 'allow_default_route', _('Allow a default route'),
			_('Lets the prefix be 0.0.0.0/0 or ::/0, which draws all traffic to this router; pathosd refuses a default route otherwise.'));
		o.modalonly = true;

		o = s.taboption('general', form.Value, 'checks_policy', _('Checks policy'),
			_('all, any, or an expression of check names such as web || (dns && ping).'));
		o.placeholder = 'all';
		showDefault(o);

		o = s.taboption('general', form.Flag, 'always', _('Always announce'),
			_('Announce while pathosd runs, without checks (a VIP needs either checks or this).'));

		o = s.taboption('general', form.Flag, 'require_local_address', _('Require local address'),
			_('Fail the checks while the VIP address is not on a local interface.'));
		o.modalonly = true;

		o = s.taboption('general', form.Value, 'local_interface', _('Local interface'));
		o.depends('require_local_address', '1');
		o.placeholder = _('any');
		o.modalonly = true;

		o = s.taboption('general', form.DynamicList, 'service', _('Needs services'),
			_('procd services (init script names, such as dnsmasq): when procd stops one, the VIP fails at once (its When unhealthy action); when it starts again, the checks run at once.'));
		o.validate = validateNeedName;
		o.modalonly = true;
		flagItems(o);

		o = s.taboption('general', form.DynamicList, 'interface', _('Needs interfaces'),
			_('Network interfaces (such as wan): when one goes down, the VIP fails at once; when it comes up, the checks run at once.'));
		o.validate = validateNeedName;
		o.modalonly = true;
		flagItems(o);

		o = s.taboption('policy', form.ListValue, 'fail_action', _('When unhealthy'),
			_('lower priority, the default, keeps an unhealthy VIP announced, only pessimized (AS-path prepends, communities): routers may still send it traffic. withdraw stops announcing it; drain, then withdraw pessimizes it for the drain time first.'));
		o.value('lower_priority', _('lower priority (prepend, communities)'));
		o.value('withdraw', _('withdraw'));
		o.value('drain_then_withdraw', _('drain, then withdraw'));
		defaultNotWritten(o, 'lower_priority');
		showLabel(o);

		o = s.taboption('policy', form.Value, 'drain_time', _('Drain time'));
		o.validate = validateDuration;
		o.placeholder = '30s';
		o.depends('fail_action', 'drain_then_withdraw');
		o.depends({ drain_until_flows_below: /^[1-9][0-9]*$/ });
		o.modalonly = true;

		o = s.taboption('policy', form.Value, 'drain_until_flows_below', _('Withdraw a drain below N flows'),
			_('A drain (the drain file, the API or drain_then_withdraw) withdraws as soon as fewer than this many connections to the VIP remain in the router\'s conntrack table, and at the drain time at the latest. Empty or 0: a drain only pessimizes.'));
		o.datatype = 'uinteger';
		o.placeholder = '0';
		o.modalonly = true;

		o = s.taboption('policy', form.Value, 'recovery_hold', _('Recovery hold'),
			_('A withdrawn VIP is announced again only after being healthy this long.'));
		o.validate = validateDuration;
		o.placeholder = '0s';
		o.modalonly = true;

		o = s.taboption('policy', form.Flag, 'damping', _('Damp flapping'),
			_('Route flap damping (RFC 2439) of this VIP\'s own announcements: each loss of health adds 1000 to a penalty that halves every half-life. Above the suppress limit the VIP is held withdrawn (pessimized with lower priority) until the penalty has decayed below the reuse limit, then announced again if healthy.'));
		o.modalonly = true;

		o = s.taboption('policy', form.Value, 'damping_half_life', _('Damping half-life'));
		o.validate = validateDampingHalfLife;
		o.placeholder = '5m';
		o.depends('damping', '1');
		o.modalonly = true;

		o = s.taboption('policy', form.Value, 'damping_suppress', _('Damping suppress limit'),
			_('Penalty above which the VIP is damped; a flap adds 1000, so 2000 damps at the third flap in a row.'));
		o.datatype = 'uinteger';
		o.placeholder = '2000';
		o.depends('damping', '1');
		o.modalonly = true;

		o = s.taboption('policy', form.Value, 'damping_reuse', _('Damping reuse limit'));
		o.datatype = 'uinteger';
		o.validate = validateDampingReuse;
		o.placeholder = '750';
		o.depends('damping', '1');
		o.modalonly = true;

		o = s.taboption('policy', form.Value, 'damping_max_suppress', _('Damping max suppress time'),
			_('Longest the VIP stays damped after its last flap.'));
		o.validate = validateDampingMaxSuppress;
		o.placeholder = '20m';
		o.depends('damping', '1');
		o.modalonly = true;

		o = s.taboption('policy', form.Value, 'as_path_prepend', _('AS-path prepends while healthy'));
		o.datatype = 'range(0,16)';
		o.placeholder = '0';
		o.modalonly = true;

		o = s.taboption('policy', form.DynamicList, 'community', _('Communities'));
		o.validate = validateCommunity;
		o.modalonly = true;
		flagItems(o);

		o = s.taboption('policy', form.DynamicList, 'large_community', _('Large communities'));
		o.validate = validateLargeCommunity;
		o.modalonly = true;
		flagItems(o);

		o = s.taboption('policy', form.Value, 'med', _('MED'),
			_('MULTI_EXIT_DISC sent with the route; lower is preferred. Empty: none.'));
		o.datatype = 'range(0,4294967295)';
		o.modalonly = true;

		o = s.taboption('policy', form.Value, 'local_pref', _('LOCAL_PREF (iBGP)'),
			_('LOCAL_PREF sent to iBGP neighbors; higher is preferred.'));
		o.datatype = 'range(0,4294967295)';
		o.placeholder = '100';
		o.modalonly = true;

		o = s.taboption('policy', form.Value, 'lower_priority_as_path_prepend', _('Extra prepends while pessimized'));
		o.datatype = 'range(0,16)';
		o.placeholder = '6';
		o.modalonly = true;

		o = s.taboption('policy', form.DynamicList, 'lower_priority_community', _('Communities while pessimized'));
		o.validate = validateCommunity;
		o.modalonly = true;
		flagItems(o);

		o = s.taboption('policy', form.DynamicList, 'lower_priority_large_community', _('Large communities while pessimized'));
		o.validate = validateLargeCommunity;
		o.modalonly = true;
		flagItems(o);

		/* The daemon refuses a pessimized route that would be preferred
		 * to the healthy one (a lower MED, a higher LOCAL_PREF). */
		o = s.taboption('policy', form.Value, 'lower_priority_med', _('MED while pessimized'),
			_('Not below the MED. Empty: the MED.'));
		o.datatype = 'range(0,4294967295)';
		o.modalonly = true;
		o.validate = function(section_id, value) {
			var med = this.section.formvalue(section_id, 'med');
			if (value !== '' && value != null && +value < +(med || 0))
				return _('Below the MED %s: a pessimized route would be preferred').replace('%s', med || '0');
			return true;
		};

		o = s.taboption('policy', form.Value, 'lower_priority_local_pref', _('LOCAL_PREF while pessimized'),
			_('Not above the LOCAL_PREF. Empty: the LOCAL_PREF.'));
		o.datatype = 'range(0,4294967295)';
		o.modalonly = true;
		o.validate = function(section_id, value) {
			var pref = this.section.formvalue(section_id, 'local_pref');
			if (pref === '' || pref == null)
				pref = '100';
			if (value !== '' && value != null && +value > +pref)
				return _('Above the LOCAL_PREF %s: a pessimized route would be preferred').replace('%s', pref);
			return true;
		};

		o = s.taboption('policy', form.Value, 'lower_priority_file', _('Drain file'),
			_('While this file exists the VIP is pessimized.'));
		o.modalonly = true;
		/* An example for this VIP, not one file name for all. */
		namePlaceholder(o, function(v) {
			return '/tmp/pathosd-' + objectName(v) + '.drain';
		});

		/* config check 'VIP_TYPE' with option vip */
		s = m.section(form.GridSection, 'check', _('Checks'));
		s.checkDepends = noDepends;
		s.anonymous = true;
		s.addremove = true;
		s.nodescriptions = true;
		/* The name the status page and checks_policy use, not cfg0a5f56. */
		s.sectiontitle = function(section_id) {
			return checkName(uci.get('pathosd', section_id) || { '.name': section_id });
		};
		s.tab('general', _('General'));
		s.tab('type', _('Type options'));
		pageable(s, _('Checks'), function(c) {
			return [ checkName(c), c['.name'], c.vip, c.type ].join(' ');
		});

		/* Add picks the VIP and the type first: the new section is named
		 * after them (web_http), and the dialog opens with both set. */
		s.renderSectionAdd = function(extra_class) {
			var vips = uci.sections('pathosd', 'vip').map(objectName);
			var vipSel, typeSel;

			if (!vips.length)
				return E('div', { 'class': 'cbi-section-create' }, [
					E('em', [ _('Add a VIP first: a check belongs to a VIP.') ])
				]);

			/* Typed, with the VIPs as suggestions (the browser narrows them
			 * as one types): not one select of 1,000 VIPs. */
			vipSel = E('input', { 'class': 'cbi-input-text pathosd-add-vip', 'list': 'pathosd-vip-names', 'placeholder': _('its name') });
			typeSel = E('select', { 'class': 'cbi-input-select pathosd-add-type' }, CHECK_TYPES.map(function(t) {
				return E('option', { 'value': t }, [ t ]);
			}));

			return E('div', { 'class': 'cbi-section-create cbi-tblsection-create' }, [
				E('datalist', { 'id': 'pathosd-vip-names' }, vips.map(function(n) {
					return E('option', { 'value': n });
				})),
				E('label', {}, [ _('VIP') + ' ', vipSel ]),
				E('label', {}, [ _('Type') + ' ', typeSel ]),
				E('button', {
					'class': 'cbi-button cbi-button-add pathosd-add-check',
					'title': _('Add a check'),
					'click': ui.createHandlerFn(this, 'handleAddCheck', vipSel, typeSel)
				}, [ _('Add') ])
			]);
		};

		/* form.js GridSection.handleAdd(), with a name and the VIP and type
		 * set before the dialog renders. */
		s.handleAddCheck = function(vipSel, typeSel, ev) {
			var vip = vipSel.value, type = selectValue(typeSel), sid;

			if (!vipsNamed(vip).length) {
				showMessage(_('Not added'), [ E('p', { 'class': 'pathosd-no-vip' }, [
					_('No VIP is named "%s": type the name of one (the field suggests them).').replace('%s', vip || '')
				]) ]);
				return Promise.resolve();
			}
			sid = uci.add('pathosd', 'check', newCheckName(vip, type));

			uci.set('pathosd', sid, 'vip', vip);
			uci.set('pathosd', sid, 'type', type);
			this.map.addedSection = sid;
			return this.renderMoreOptionsModal(sid);
		};

		o = s.taboption('general', form.Flag, 'enabled', _('Enabled'));
		o.default = '1';

		o = s.taboption('general', form.Value, 'name', _('Name'),
			_('The name in checks policy and on the status page. Empty: the section name, or the type for an unnamed section.'));
		o.validate = validateCheckName;
		o.modalonly = true;
		namePlaceholder(o, function(c) {
			return (c['.anonymous'] && !c.type) ? _('the type') : checkName(c);
		});

		/* The VIPs as they are now, including one added on this page; a
		 * VIP name no VIP has (deleted, renamed, mistyped) is shown as it is
		 * and flagged, never replaced by the first VIP. */
		o = s.taboption('general', form.ListValue, 'vip', _('VIP'));
		o.rmempty = false;
		o.customLoad = true;
		/* Built when the field is drawn (once, in the dialog), not when the
		 * page loads every check: that is 1,000 x 1,000 at 1,000 VIPs. */
		o.renderWidget = function(section_id, option_index, cfgvalue) {
			var self = this;
			var v = cfgvalue;

			this.keylist = [];
			this.vallist = [];
			if (v == null)
				this.value('', _('-- choose the VIP --'));
			uci.sections('pathosd', 'vip').forEach(function(s) {
				self.value(objectName(s));
				if (v != null && v === s['.name'] && v !== objectName(s))
					self.value(v, _('%s (the section of VIP %s)').replace('%s', v).replace('%s', objectName(s)));
			});
			if (v != null && this.keylist.indexOf(String(v)) < 0)
				this.value(v, _('%s (no such VIP)').replace('%s', v));
			return form.ListValue.prototype.renderWidget.apply(this, arguments);
		};
		o.validate = function(section_id, value) {
			if (vipsNamed(value).length || isOff(this.section.formvalue(section_id, 'enabled')))
				return true;
			if (value == null || value === '')
				return _('Choose the VIP of this check');
			return _('No VIP is named %s (deleted or renamed?): choose its VIP, or untick Enabled').replace('%s', value);
		};

		o = s.taboption('general', form.ListValue, 'type', _('Type'));
		o.rmempty = false;
		CHECK_TYPES.forEach(function(t) {
			o.value(t);
		});
		o.missingChoice = _('-- choose the type --');

		o = s.taboption('general', form.Value, 'interval', _('Interval'));
		o.validate = validateTiming;
		o.placeholder = CHECK_DEFAULTS.interval;
		showDefault(o);

		o = s.taboption('general', form.Value, 'timeout', _('Timeout'),
			_('Must be less than the interval.'));
		o.validate = validateTiming;
		o.placeholder = CHECK_DEFAULTS.timeout;
		showDefault(o);

		o = s.taboption('general', form.Value, 'fast_interval', _('Fast interval'),
			_('Time between probes while rise or fall is counting, until it decides; empty: the interval. More than the timeout, at most the interval.'));
		o.validate = validateFastInterval;
		o.modalonly = true;

		o = s.taboption('general', form.Value, 'rise', _('Rise'));
		o.datatype = 'min(1)';
		o.placeholder = CHECK_DEFAULTS.rise;
		showDefault(o);

		o = s.taboption('general', form.Value, 'fall', _('Fall'));
		o.datatype = 'min(1)';
		o.placeholder = CHECK_DEFAULTS.fall;
		showDefault(o);

		o = s.taboption('general', form.Flag, 'detailed_metrics', _('Detailed metrics'));
		o.modalonly = true;

		o = s.taboption('general', form.Value, 'degraded_latency', _('Degraded above'),
			_('A passing probe slower than this is slow: Fall slow probes in a row pessimize the VIP, Rise fast ones end it. Empty: off.'));
		o.validate = validateDegradedLatency;
		o.modalonly = true;

		o = s.taboption('general', form.Value, 'degraded_hold_down', _('Degraded hold-down'),
			_('Least time between two changes of degraded, so a backend at the threshold moves the route at most once per period.'));
		o.validate = validateDuration;
		o.placeholder = '60s';
		o.modalonly = true;

		CHECK_OPTIONS.forEach(function(spec) {
			addCheckOption(s, spec);
		});

		finish(m);

		this.map = m;

		return m.render().then(function(mapEl) {
			return E('div', {}, [ self.reloadNode, self.noticeNode, start(), mapEl, common.style() ]);
		});
	}
});
