'use strict';
'require view';
'require form';
'require uci';
'require rpc';
'require poll';
'require ui';
'require dom';

/*
 * Editor for /etc/config/pathosd. The option names are the daemon's UCI
 * names (crates/pathosd-core/src/config/uci_map.rs); Save & Apply commits through rpcd, whose
 * config.change event makes procd run "/etc/init.d/pathosd reload", which
 * sends pathosd SIGHUP. An invalid file is rejected by the daemon, which
 * keeps running with its previous configuration: the page therefore checks
 * what it can with the daemon's own rules before applying (durations,
 * timeout < interval, 16-bit community parts, names, a check or "always" per
 * VIP) and shows the daemon's last reload (ubus status last_reload) when it
 * was rejected.
 *
 * Defaults: every form default and placeholder is the daemon's default
 * (schema/pathosd-config-v1.schema.json), so what the form shows for an unset
 * option is what the daemon does; Flags whose daemon default is on have
 * default '1', so unticking writes '0' (LuCI removes an option that equals
 * its default).
 */

var callStatus = rpc.declare({
	object: 'pathosd',
	method: 'status',
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

var CHECK_TYPES = [ 'http', 'https', 'dns', 'ping', 'tcp', 'udp', 'grpc', 'exec' ];

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

function isOff(v) {
	return v === '0' || v === 'false' || v === 'no' || v === 'off' || v === 'disabled';
}

function isOn(v) {
	return v === '1' || v === 'true' || v === 'yes' || v === 'on' || v === 'enabled';
}

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

/*
 * What the daemon would reject across sections, which no single field can
 * tell: every enabled VIP needs a check or "always", not both; a check's vip
 * must be an enabled VIP; check names are unique within their VIP.
 */
function configErrors() {
	var errs = [];
	var vips = uci.sections('pathosd', 'vip').filter(function(v) { return !isOff(v.enabled); });
	var checks = uci.sections('pathosd', 'check').filter(function(c) { return !isOff(c.enabled); });

	vips.forEach(function(v) {
		var name = objectName(v);
		var own = checks.filter(function(c) { return c.vip === name || c.vip === v['.name']; });
		var seen = {};

		if (isOn(v.always) && own.length)
			errs.push(_('VIP %s: "Always announce" is set, so it must have no checks').replace('%s', name));
		else if (!isOn(v.always) && !own.length)
			errs.push(_('VIP %s: needs a check, or "Always announce"').replace('%s', name));

		own.forEach(function(c) {
			var n = checkName(c);
			if (seen[n])
				errs.push(_('VIP %s: two checks are named %s (set their name option)').replace('%s', name).replace('%s', n));
			seen[n] = true;
		});
	});

	checks.forEach(function(c) {
		var known = uci.sections('pathosd', 'vip').some(function(v) {
			return c.vip === objectName(v) || c.vip === v['.name'];
		});
		if (!known)
			errs.push(_('Check %s: no VIP named %s').replace('%s', checkName(c)).replace('%s', c.vip == null ? '' : c.vip));
	});

	return errs;
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

/* The check defaults of the daemon (schema/pathosd-config-v1.schema.json). */
var CHECK_DEFAULTS = { interval: '1s', timeout: '100ms', rise: '1', fall: '3' };

/*
 * Type-specific check options: [ option, widget, title, types, extra ].
 * One UCI option used by several check types with one meaning (host,
 * expect...) is one form option depending on each of those types; one whose
 * default differs by type (port, method) is one form option per default,
 * writing the same UCI option (extra.ucioption). Placeholders and defaults
 * are the daemon's.
 */
var CHECK_OPTIONS = [
	[ 'url', 'Value', _('URL'), [ 'http', 'https' ], { placeholder: '/', description: _('A path (requested from the VIP address) or a full URL') } ],
	[ 'host', 'Value', _('Host'), [ 'http', 'https', 'tcp', 'udp', 'grpc' ], { datatype: 'host', description: _('Empty: the VIP address') } ],
	[ 'port', 'Value', _('Port'), [ 'http', 'https', 'tcp', 'udp', 'grpc' ], { datatype: 'port', description: _('HTTP: empty takes the port of the URL; required for tcp, udp and grpc') } ],
	[ 'dns_port', 'Value', _('Port'), [ 'dns' ], { ucioption: 'port', datatype: 'port', placeholder: '53' } ],
	[ 'method', 'Value', _('Method'), [ 'http', 'https' ], { placeholder: 'GET' } ],
	[ 'grpc_method', 'Value', _('Method'), [ 'grpc' ], { ucioption: 'method', description: _('Empty: the gRPC health checking protocol (grpc.health.v1)') } ],
	[ 'header', 'DynamicList', _('Request headers'), [ 'http', 'https' ], { description: _('Name: value, for example Host: www.example.com') } ],
	[ 'response_code', 'DynamicList', _('Accepted status codes'), [ 'http', 'https' ], { placeholder: '200', description: _('Codes or ranges such as 200-299; empty: 200 only') } ],
	[ 'response_text', 'Value', _('Response contains'), [ 'http', 'https' ] ],
	[ 'response_regex', 'Value', _('Response matches regex'), [ 'http', 'https' ] ],
	[ 'response_jq', 'Value', _('Response JSON expression'), [ 'http', 'https' ], { description: _('For example .ready == true') } ],
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

	if (extra.ucioption) o.ucioption = extra.ucioption;
	if (extra.default) defaultNotWritten(o, extra.default);
	if (extra.datatype) o.datatype = extra.datatype;
	if (extra.placeholder) o.placeholder = extra.placeholder;
	if (extra.description) o.description = extra.description;
	if (extra.validate) o.validate = extra.validate;

	return o;
}

/* A rejected reload, until a later one is applied (ubus status last_reload). */
function renderReload(status) {
	var r = status ? status.last_reload : null;

	if (!r || r.result !== 'rejected')
		return E([]);

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
	load: function() {
		return Promise.all([
			uci.load('pathosd'),
			L.resolveDefault(callStatus(), null)
		]);
	},

	/* Save & Apply: save into LuCI's staged changes, but apply only what the
	 * daemon would take; else say why and leave the changes staged. */
	handleSaveApply: function(ev, mode) {
		var self = this;

		return this.handleSave(ev).then(function() {
			var errs = configErrors();

			if (errs.length) {
				dom.content(self.noticeNode, E('div', { 'class': 'alert-message danger pathosd-invalid' }, [
					E('h4', [ _('Not applied: pathosd would reject this configuration') ]),
					E('ul', errs.map(function(e) { return E('li', [ e ]); }))
				]));
				return;
			}

			dom.content(self.noticeNode, null);
			return ui.changes.apply(mode == '0');
		});
	},

	updateReload: function(status) {
		dom.content(this.reloadNode, renderReload(status));
	},

	render: function(data) {
		var self = this;
		var m, s, o;

		m = new form.Map('pathosd', _('pathosd'),
			_('Health-checked VIP announcements over BGP. Nothing runs until "Enabled" is set; a configuration the daemon rejects leaves the running one in place, and this page says so.'));

		/* config pathosd 'main' */
		s = m.section(form.NamedSection, 'main', 'pathosd', _('General settings'));
		s.anonymous = true;
		s.addremove = false;
		s.tab('general', _('General'));
		s.tab('bgp', _('BGP'));
		s.tab('api', _('API and logging'));

		o = s.taboption('general', form.Flag, 'enabled', _('Enabled'));
		o.rmempty = false;

		o = s.taboption('general', form.Value, 'asn', _('Local AS'));
		o.datatype = 'range(1,4294967295)';
		o.rmempty = false;

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
			_('-1: never listen (pathosd dials every neighbor).'));
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

		/* config neighbor 'NAME' */
		s = m.section(form.GridSection, 'neighbor', _('BGP neighbors'));
		s.anonymous = false;
		s.addremove = true;
		s.nodescriptions = true;
		s.sectiontitle = function(section_id) {
			return objectName(uci.get('pathosd', section_id) || { '.name': section_id });
		};

		o = s.option(form.Flag, 'enabled', _('Enabled'));
		o.default = '1';

		o = s.option(form.Value, 'name', _('Name'),
			_('Empty: the section name. Needed for names with - or . (not allowed in UCI section names).'));
		o.validate = validateObjectName;
		o.modalonly = true;
		namePlaceholder(o, objectName);

		o = s.option(form.Value, 'address', _('Address'));
		o.datatype = 'ipaddr';
		o.rmempty = false;

		o = s.option(form.Value, 'peer_asn', _('Peer AS'));
		o.datatype = 'range(1,4294967295)';
		o.rmempty = false;

		o = s.option(form.Value, 'port', _('Port'));
		o.datatype = 'port';
		o.placeholder = '179';
		showDefault(o);

		o = s.option(form.Flag, 'passive', _('Passive'));

		/* The daemon: required unless the option is 0. */
		o = s.option(form.Flag, 'required', _('Required'),
			_('/readyz fails while this session is down.'));
		o.default = '1';

		o = s.option(form.Value, 'local_address', _('Local address'));
		o.datatype = 'ipaddr';
		o.modalonly = true;

		o = s.option(form.Value, 'auth_password', _('TCP MD5 password'));
		o.password = true;
		o.modalonly = true;

		o = s.option(form.Flag, 'enable_multihop', _('eBGP multihop'));
		o.modalonly = true;

		o = s.option(form.Value, 'multihop_ttl', _('Multihop TTL'), _('Empty: 255.'));
		o.datatype = 'range(2,255)';
		o.depends('enable_multihop', '1');
		o.modalonly = true;

		o = s.option(form.Flag, 'ttl_security', _('TTL security (GTSM)'));
		o.modalonly = true;

		o = s.option(form.Value, 'hold_time', _('Hold time'), _('Empty: as in General settings.'));
		o.validate = validateDuration;
		o.modalonly = true;

		o = s.option(form.Value, 'keepalive_time', _('Keepalive time'), _('Empty: as in General settings.'));
		o.validate = validateDuration;
		o.modalonly = true;

		o = s.option(form.Value, 'error_wait_min', _('Error wait (min)'),
			_('Idle time before reconnecting after a first error; it doubles on each further error.'));
		o.validate = validateErrorWait;
		o.placeholder = '1s';
		o.modalonly = true;

		o = s.option(form.Value, 'error_wait_max', _('Error wait (max)'),
			_('Cap of the doubling; a session that stayed up this long is redialled at once.'));
		o.validate = validateErrorWait;
		o.placeholder = '60s';
		o.modalonly = true;

		o = s.option(form.ListValue, 'graceful_restart', _('Graceful restart'));
		o.value('', _('as in General settings'));
		o.value('1', _('on'));
		o.value('0', _('off'));
		o.modalonly = true;

		/* config vip 'NAME' */
		s = m.section(form.GridSection, 'vip', _('VIPs'));
		s.anonymous = false;
		s.addremove = true;
		s.nodescriptions = true;
		s.sectiontitle = function(section_id) {
			return objectName(uci.get('pathosd', section_id) || { '.name': section_id });
		};
		s.tab('general', _('General'));
		s.tab('policy', _('Policy'));

		o = s.taboption('general', form.Flag, 'enabled', _('Enabled'));
		o.default = '1';

		o = s.taboption('general', form.Value, 'name', _('Name'),
			_('Empty: the section name. Needed for names with - or . (not allowed in UCI section names); checks name their VIP by either.'));
		o.validate = validateObjectName;
		o.modalonly = true;
		namePlaceholder(o, objectName);

		o = s.taboption('general', form.Value, 'prefix', _('Prefix'));
		o.datatype = 'cidr';
		o.rmempty = false;

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

		o = s.taboption('policy', form.ListValue, 'fail_action', _('When unhealthy'));
		o.value('lower_priority', _('lower priority (prepend, communities)'));
		o.value('withdraw', _('withdraw'));
		o.value('drain_then_withdraw', _('drain, then withdraw'));
		defaultNotWritten(o, 'lower_priority');
		showLabel(o);

		o = s.taboption('policy', form.Value, 'drain_time', _('Drain time'));
		o.validate = validateDuration;
		o.placeholder = '30s';
		o.depends('fail_action', 'drain_then_withdraw');
		o.modalonly = true;

		o = s.taboption('policy', form.Value, 'recovery_hold', _('Recovery hold'),
			_('A withdrawn VIP is announced again only after being healthy this long.'));
		o.validate = validateDuration;
		o.placeholder = '0s';
		o.modalonly = true;

		o = s.taboption('policy', form.Value, 'as_path_prepend', _('AS-path prepends while healthy'));
		o.datatype = 'range(0,16)';
		o.placeholder = '0';
		o.modalonly = true;

		o = s.taboption('policy', form.DynamicList, 'community', _('Communities'));
		o.validate = validateCommunity;
		o.modalonly = true;

		o = s.taboption('policy', form.DynamicList, 'large_community', _('Large communities'));
		o.validate = validateLargeCommunity;
		o.modalonly = true;

		o = s.taboption('policy', form.Value, 'lower_priority_as_path_prepend', _('Extra prepends while pessimized'));
		o.datatype = 'range(0,16)';
		o.placeholder = '6';
		o.modalonly = true;

		o = s.taboption('policy', form.DynamicList, 'lower_priority_community', _('Communities while pessimized'));
		o.validate = validateCommunity;
		o.modalonly = true;

		o = s.taboption('policy', form.DynamicList, 'lower_priority_large_community', _('Large communities while pessimized'));
		o.validate = validateLargeCommunity;
		o.modalonly = true;

		o = s.taboption('policy', form.Value, 'lower_priority_file', _('Drain file'),
			_('While this file exists the VIP is pessimized.'));
		o.modalonly = true;
		/* An example for this VIP, not one file name for all. */
		namePlaceholder(o, function(v) {
			return '/tmp/pathosd-' + objectName(v) + '.drain';
		});

		/* config check ['NAME'] with option vip; usually anonymous */
		s = m.section(form.GridSection, 'check', _('Checks'));
		s.anonymous = true;
		s.addremove = true;
		s.nodescriptions = true;
		/* The name the status page and checks_policy use, not cfg0a5f56. */
		s.sectiontitle = function(section_id) {
			return checkName(uci.get('pathosd', section_id) || { '.name': section_id });
		};
		s.tab('general', _('General'));
		s.tab('type', _('Type options'));

		o = s.taboption('general', form.Flag, 'enabled', _('Enabled'));
		o.default = '1';

		o = s.taboption('general', form.Value, 'name', _('Name'),
			_('The name in checks policy and on the status page. Empty: the section name, or the type for an unnamed section.'));
		o.validate = validateCheckName;
		o.modalonly = true;
		namePlaceholder(o, function(c) {
			return (c['.anonymous'] && !c.type) ? _('the type') : checkName(c);
		});

		/* The VIPs as they are now, including one added on this page. */
		o = s.taboption('general', form.ListValue, 'vip', _('VIP'));
		o.rmempty = false;
		o.load = function(section_id) {
			var self = this;

			this.keylist = [];
			this.vallist = [];
			uci.sections('pathosd', 'vip').forEach(function(v) {
				self.value(objectName(v));
			});

			return form.ListValue.prototype.load.apply(this, [ section_id ]);
		};

		o = s.taboption('general', form.ListValue, 'type', _('Type'));
		o.rmempty = false;
		CHECK_TYPES.forEach(function(t) {
			o.value(t);
		});

		o = s.taboption('general', form.Value, 'interval', _('Interval'));
		o.validate = validateTiming;
		o.placeholder = CHECK_DEFAULTS.interval;
		showDefault(o);

		o = s.taboption('general', form.Value, 'timeout', _('Timeout'),
			_('Must be less than the interval.'));
		o.validate = validateTiming;
		o.placeholder = CHECK_DEFAULTS.timeout;
		showDefault(o);

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

		CHECK_OPTIONS.forEach(function(spec) {
			addCheckOption(s, spec);
		});

		this.map = m;
		this.reloadNode = E('div', { 'class': 'pathosd-reload' });
		this.noticeNode = E('div', { 'class': 'pathosd-notice' });
		this.updateReload(data ? data[1] : null);

		/* The daemon reloads a second or so after Apply: keep watching. */
		poll.add(function() {
			return L.resolveDefault(callStatus(), null).then(function(st) {
				self.updateReload(st);
			});
		}, 5);

		return m.render().then(function(mapEl) {
			return E('div', {}, [ self.reloadNode, self.noticeNode, mapEl ]);
		});
	}
});
