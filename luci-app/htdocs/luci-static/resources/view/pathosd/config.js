'use strict';
'require view';
'require form';
'require uci';

/*
 * Editor for /etc/config/pathosd. The option names are the daemon's UCI
 * names (src/config/uci_map.rs); Save & Apply commits through rpcd, whose
 * config.change event makes procd run "/etc/init.d/pathosd reload", which
 * sends pathosd SIGHUP. An invalid file is rejected by the daemon, which
 * keeps running with its previous configuration (see logread -e pathosd).
 */

var DURATION_RE = new RegExp('^([0-9]+(\\.[0-9]+)?(ns|us|\u00b5s|ms|s|m|h))+$');
var COMMUNITY_RE = new RegExp('^[0-9]{1,10}:[0-9]{1,10}$');
var LARGE_COMMUNITY_RE = new RegExp('^[0-9]{1,10}:[0-9]{1,10}:[0-9]{1,10}$');
var PLACEHOLDER_RE = new RegExp('%\\{[A-Za-z_][A-Za-z0-9_]*\\}');

var CHECK_TYPES = [ 'http', 'https', 'dns', 'ping', 'tcp', 'udp', 'grpc', 'exec' ];

/* %{VAR} placeholders are expanded by the daemon; they are not checked here. */
function placeholder(value) {
	return value != null && PLACEHOLDER_RE.test(value);
}

function validateDuration(section_id, value) {
	if (value == null || value === '' || value === '0' || placeholder(value))
		return true;

	return DURATION_RE.test(value) ? true : _('Expecting a duration such as 500ms, 2s or 1m30s');
}

function validateCommunity(section_id, value) {
	if (value == null || value === '' || placeholder(value))
		return true;

	return COMMUNITY_RE.test(value) ? true : _('Expecting ASN:VALUE, for example 65001:100');
}

function validateLargeCommunity(section_id, value) {
	if (value == null || value === '' || placeholder(value))
		return true;

	return LARGE_COMMUNITY_RE.test(value) ? true : _('Expecting GLOBAL:LOCAL1:LOCAL2, for example 65001:1:666');
}

/*
 * Type-specific check options: [ option, widget, title, types, extra ].
 * One UCI option used by several check types (port, host, expect...) is one
 * form option depending on each of those types.
 */
var CHECK_OPTIONS = [
	[ 'url', 'Value', _('URL'), [ 'http', 'https' ], { placeholder: 'http://127.0.0.1/healthz' } ],
	[ 'host', 'Value', _('Host'), [ 'http', 'https', 'tcp', 'udp', 'grpc' ], { datatype: 'host' } ],
	[ 'port', 'Value', _('Port'), [ 'http', 'https', 'dns', 'tcp', 'udp', 'grpc' ], { datatype: 'port' } ],
	[ 'method', 'Value', _('Method'), [ 'http', 'https', 'grpc' ], { description: _('HTTP method (GET) or gRPC method (/package.Service/Method; empty: grpc.health.v1)') } ],
	[ 'header', 'DynamicList', _('Request headers'), [ 'http', 'https' ], { placeholder: 'Host: www.example.com' } ],
	[ 'response_code', 'DynamicList', _('Accepted status codes'), [ 'http', 'https' ], { placeholder: '200-299' } ],
	[ 'response_text', 'Value', _('Response contains'), [ 'http', 'https' ] ],
	[ 'response_regex', 'Value', _('Response matches regex'), [ 'http', 'https' ] ],
	[ 'response_jq', 'Value', _('Response JSON expression'), [ 'http', 'https' ], { placeholder: '.ready == true' } ],
	[ 'proxy', 'Value', _('Forward proxy'), [ 'http', 'https' ], { placeholder: 'http://127.0.0.1:3128' } ],
	[ 'keep_alive', 'Flag', _('Reuse the connection'), [ 'http', 'https' ] ],
	[ 'tls', 'Flag', _('TLS'), [ 'grpc' ] ],
	[ 'tls_insecure', 'Flag', _('Skip certificate verification'), [ 'http', 'https', 'grpc' ] ],
	[ 'tls_ca_cert', 'Value', _('CA certificate file'), [ 'http', 'https', 'grpc' ], { datatype: 'file' } ],
	[ 'tls_server_name', 'Value', _('TLS server name'), [ 'http', 'https', 'grpc' ], { datatype: 'hostname' } ],
	[ 'tls_client_cert', 'Value', _('Client certificate file'), [ 'http', 'https' ], { datatype: 'file' } ],
	[ 'tls_client_key', 'Value', _('Client key file'), [ 'http', 'https' ], { datatype: 'file' } ],
	[ 'query', 'DynamicList', _('Names to query'), [ 'dns' ], { placeholder: 'openwrt.lan.' } ],
	[ 'resolver', 'Value', _('Resolver'), [ 'dns' ], { datatype: 'host', placeholder: '127.0.0.1' } ],
	[ 'query_type', 'ListValue', _('Query type'), [ 'dns' ], { values: [ 'A', 'AAAA', 'CNAME', 'MX', 'TXT', 'SRV', 'PTR', 'NS', 'SOA' ] } ],
	[ 'expected_rcode', 'ListValue', _('Expected response code'), [ 'dns' ], { values: [ 'NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED' ] } ],
	[ 'expected_answer', 'DynamicList', _('Expected answers'), [ 'dns' ] ],
	[ 'expected_match', 'ListValue', _('Expected answers must'), [ 'dns' ], { values: [ 'any', 'all' ] } ],
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
	[ 'service', 'Value', _('Health service name'), [ 'grpc' ] ],
	[ 'ok_code', 'DynamicList', _('Accepted gRPC codes'), [ 'grpc' ], { placeholder: 'OK' } ],
	[ 'metadata', 'DynamicList', _('Metadata'), [ 'grpc' ], { placeholder: 'authorization: Bearer token' } ],
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
		o.optional = true;
		o.value('', _('default'));
		extra.values.forEach(function(v) {
			o.value(v);
		});
	}

	if (extra.datatype) o.datatype = extra.datatype;
	if (extra.placeholder) o.placeholder = extra.placeholder;
	if (extra.description) o.description = extra.description;
	if (extra.validate) o.validate = extra.validate;

	return o;
}

return view.extend({
	load: function() {
		return uci.load('pathosd');
	},

	render: function() {
		var m, s, o;

		m = new form.Map('pathosd', _('pathosd'),
			_('Health-checked VIP announcements over BGP. Nothing runs until "Enabled" is set; a configuration the daemon rejects leaves the running one in place (see the system log).'));

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
		o.placeholder = '65001';

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
			_('-1: never listen (pathosd dials every neighbor); 0 or empty: 179.'));
		o.datatype = 'range(-1,65535)';

		o = s.taboption('bgp', form.Value, 'hold_time', _('Hold time'));
		o.validate = validateDuration;
		o.placeholder = '90s';

		o = s.taboption('bgp', form.Value, 'keepalive_time', _('Keepalive time'));
		o.validate = validateDuration;
		o.placeholder = '30s';

		o = s.taboption('bgp', form.Flag, 'graceful_restart', _('Graceful restart'));
		o.default = '1';

		o = s.taboption('bgp', form.Value, 'shutdown_drain', _('Shutdown drain'),
			_('Time between withdrawing the routes and closing the sessions on stop; keep it under 4s (procd kills after 5s).'));
		o.validate = validateDuration;

		o = s.taboption('api', form.Value, 'api_listen', _('HTTP API listen address'),
			_('The API has no authentication: keep it on loopback.'));
		o.placeholder = '127.0.0.1:59179';

		o = s.taboption('api', form.Value, 'ubus_socket', _('ubus socket'));
		o.placeholder = '/var/run/ubus/ubus.sock';

		o = s.taboption('api', form.ListValue, 'log_level', _('Log level'));
		o.value('error');
		o.value('warn');
		o.value('info');
		o.value('debug');
		o.default = 'info';

		/* config neighbor 'NAME' */
		s = m.section(form.GridSection, 'neighbor', _('BGP neighbors'));
		s.anonymous = false;
		s.addremove = true;
		s.nodescriptions = true;

		o = s.option(form.Flag, 'enabled', _('Enabled'));
		o.default = '1';

		o = s.option(form.Value, 'address', _('Address'));
		o.datatype = 'ipaddr';
		o.rmempty = false;

		o = s.option(form.Value, 'peer_asn', _('Peer AS'));
		o.datatype = 'range(1,4294967295)';
		o.rmempty = false;

		o = s.option(form.Value, 'port', _('Port'));
		o.datatype = 'port';
		o.placeholder = '179';

		o = s.option(form.Flag, 'passive', _('Passive'));

		o = s.option(form.Flag, 'required', _('Required'),
			_('/readyz fails while this session is down.'));

		o = s.option(form.Value, 'local_address', _('Local address'));
		o.datatype = 'ipaddr';
		o.modalonly = true;

		o = s.option(form.Value, 'auth_password', _('TCP MD5 password'));
		o.password = true;
		o.modalonly = true;

		o = s.option(form.Flag, 'enable_multihop', _('eBGP multihop'));
		o.modalonly = true;

		o = s.option(form.Value, 'multihop_ttl', _('Multihop TTL'));
		o.datatype = 'range(1,255)';
		o.depends('enable_multihop', '1');
		o.modalonly = true;

		o = s.option(form.Flag, 'ttl_security', _('TTL security (GTSM)'));
		o.modalonly = true;

		o = s.option(form.Value, 'hold_time', _('Hold time'));
		o.validate = validateDuration;
		o.modalonly = true;

		o = s.option(form.Value, 'keepalive_time', _('Keepalive time'));
		o.validate = validateDuration;
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
		s.tab('general', _('General'));
		s.tab('policy', _('Policy'));

		o = s.taboption('general', form.Flag, 'enabled', _('Enabled'));
		o.default = '1';

		o = s.taboption('general', form.Value, 'prefix', _('Prefix'));
		o.datatype = 'cidr';
		o.rmempty = false;

		o = s.taboption('general', form.Value, 'checks_policy', _('Checks policy'),
			_('all, any, or an expression of check names such as web || (dns && ping).'));
		o.placeholder = 'all';

		o = s.taboption('general', form.Flag, 'always', _('Always announce'),
			_('Announce while pathosd runs, without checks.'));

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
		o.default = 'lower_priority';

		o = s.taboption('policy', form.Value, 'drain_time', _('Drain time'));
		o.validate = validateDuration;
		o.placeholder = '30s';
		o.depends('fail_action', 'drain_then_withdraw');
		o.modalonly = true;

		o = s.taboption('policy', form.Value, 'recovery_hold', _('Recovery hold'),
			_('A withdrawn VIP is announced again only after being healthy this long.'));
		o.validate = validateDuration;
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
		o.placeholder = '/tmp/pathosd-web.drain';
		o.modalonly = true;

		/* config check 'NAME' with option vip */
		s = m.section(form.GridSection, 'check', _('Checks'));
		s.anonymous = false;
		s.addremove = true;
		s.nodescriptions = true;
		s.tab('general', _('General'));
		s.tab('type', _('Type options'));

		o = s.taboption('general', form.Flag, 'enabled', _('Enabled'));
		o.default = '1';

		o = s.taboption('general', form.ListValue, 'vip', _('VIP'));
		o.rmempty = false;
		uci.sections('pathosd', 'vip').forEach(function(v) {
			o.value(v.name || v['.name']);
		});

		o = s.taboption('general', form.ListValue, 'type', _('Type'));
		o.rmempty = false;
		CHECK_TYPES.forEach(function(t) {
			o.value(t);
		});

		o = s.taboption('general', form.Value, 'interval', _('Interval'));
		o.validate = validateDuration;
		o.placeholder = '1s';

		o = s.taboption('general', form.Value, 'timeout', _('Timeout'),
			_('Must be less than the interval.'));
		o.validate = validateDuration;
		o.placeholder = '100ms';

		o = s.taboption('general', form.Value, 'rise', _('Rise'));
		o.datatype = 'min(1)';
		o.placeholder = '1';

		o = s.taboption('general', form.Value, 'fall', _('Fall'));
		o.datatype = 'min(1)';
		o.placeholder = '3';

		o = s.taboption('general', form.Flag, 'detailed_metrics', _('Detailed metrics'));
		o.modalonly = true;

		CHECK_OPTIONS.forEach(function(spec) {
			addCheckOption(s, spec);
		});

		return m.render();
	}
});
