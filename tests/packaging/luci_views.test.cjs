'use strict';
// The LuCI views run in node:vm with LuCI's globals stubbed (E, _, N_, L,
// rpc, view, poll, ui, dom, form, uci, cbi_update_table) by the stand-ins of
// tests/packaging/shim/luci_client.cjs, which follow LuCI's own form.js,
// uci.js, rpc.js and ui.js where the views depend on them: status.js against
// canned and paged `ubus call pathosd status` replies, config.js against the
// option names of the daemon's UCI mapping
// (crates/pathosd-core/src/config/uci_map/layout.rs) and its defaults, and every
// ubus method the views declare against the rpcd ACL. The views run twice:
// as written and after jsmin (LuCI minifies them at build time).
//
// Prints "ok - NAME" / "not ok - NAME" lines; exits 1 on any failure.
//
// `node luci_views.test.cjs --live STATUS.json` instead renders a /status
// document captured from a running pathosd (tests/packaging/bird_recipe_test.sh)
// and checks that every peer, VIP and check of it shows up.
//
// PATHOSD_LUCI_APP=DIR runs the tests against the views of another copy of
// luci-app (for example the previous commit's, to see a new test fail
// there); PATHOSD_TEST_GREP=TEXT runs only the tests whose name contains it.

const fs = require('fs');
const path = require('path');
const vm = require('vm');
const assert = require('assert');
const { spawnSync } = require('child_process');

const ROOT = path.resolve(__dirname, '..', '..');
const APP = process.env.PATHOSD_LUCI_APP ? path.resolve(process.env.PATHOSD_LUCI_APP) : path.join(ROOT, 'luci-app');
const RESOURCES = path.join(APP, 'htdocs/luci-static/resources');
const VIEWS = path.join(RESOURCES, 'view/pathosd');
const ACL_FILE = path.join(APP, 'root/usr/share/rpcd/acl.d/luci-app-pathosd.json');
const MENU_FILE = path.join(APP, 'root/usr/share/luci/menu.d/luci-app-pathosd.json');
const UCI_MAP = process.env.PATHOSD_UCI_MAP || path.join(ROOT, 'crates/pathosd-core/src/config/uci_map/layout.rs');
const STATUS = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures/status.json'), 'utf8'));
const ACL = JSON.parse(fs.readFileSync(ACL_FILE, 'utf8'));

// What the app's read role and luci-base's give a reader, by ubus object.
function readGrants() {
	const out = {};
	[ ACL['luci-app-pathosd'], LUCI_BASE_ACL['luci-base'] ].forEach((role) => Object.keys(role.read.ubus || {}).forEach((o) => {
		out[o] = (out[o] || []).concat(role.read.ubus[o]);
	}));
	return out;
}

let failures = 0;
const tests = [];
function test(name, fn) {
	if (!process.env.PATHOSD_TEST_GREP || name.indexOf(process.env.PATHOSD_TEST_GREP) >= 0)
		tests.push({ name, fn });
}

// ---------------------------------------------------------------- stubs

// LuCI's client classes: no registry package carries them, so stand-ins
// that follow their semantics (tests/packaging/shim/luci_client.cjs).
const { E, text, findAll, hasClass, makeEnv, ACCESS_DENIED, NOT_ON_UBUS, LUCI_BASE_ACL } = require('./shim/luci_client.cjs');

// luci.js N_(): the singular or plural form.
const N_ = (n, s, p) => (n == 1 ? s : p);

// Runs a view's source as LuCI's loader does: the body of a function whose
// `return view.extend(...)` yields the view. 'require NAME as IDENT' of a
// pathosd module (htdocs/luci-static/resources/NAME with dots as slashes)
// loads that module the same way and binds its instance to IDENT; the other
// requires are LuCI's classes, already in the context.
function loadView(source, env, modules) {
	const ctx = vm.createContext({
		E, _: (s) => s, N_, console,
		L: env.L,
		view: env.view,
		baseclass: env.baseclass,
		rpc: env.rpc, poll: env.poll, ui: env.ui, dom: env.dom,
		form: env.form, uci: env.uci,
		cbi_update_table(table, rows, placeholder) {
			table.rows = rows;
			table.placeholder = placeholder;
		},
		Promise, JSON, Math, String, Array, Object, RegExp, Error, isNaN, parseFloat, parseInt,
		// The clock, which a test may move on (env.clockSkew, ms).
		Date: class extends Date { static now() { return Date.now() + (env.clockSkew || 0); } }
	});
	requires(source).forEach(([ dep, as ]) => {
		if (dep.indexOf('pathosd.') !== 0) return;
		assert.ok(modules && modules[dep] != null, 'module ' + dep + ' exists (' + path.join(RESOURCES, dep.replace(/\./g, '/')) + '.js)');
		ctx[as] = loadView(modules[dep], env, modules);
	});
	const wrapped = '(function() {\n' + source + '\n})';
	return vm.runInContext(wrapped, ctx, { filename: env.filename })();
}

// luci.js compileClass(): the string statements at the start of the source
// ('use strict', 'require NAME [as IDENT]', comments skipped, also when
// minified onto one line), up to the first other string; IDENT defaults to
// NAME with its non-word characters as _.
function requires(source) {
	const out = [];
	const re = /\s*(?:\/\*[\s\S]*?\*\/|\/\/[^\n]*\n|(['"])(.*?)\1\s*;?)/y;
	let m;
	while ((m = re.exec(source))) {
		if (m[1] == null) continue;
		const r = /^require[ \t]+(\S+)(?:[ \t]+as[ \t]+([a-zA-Z_]\S*))?$/.exec(m[2]);
		if (r) out.push([ r[1], r[2] || r[1].replace(/[^a-zA-Z0-9_]/g, '_') ]);
		else if (!/^use[ \t]+strict$/.test(m[2])) break;
	}
	return out;
}

// /etc/config/pathosd of the status tests: enabled.
const ENABLED_UCI = [ { '.type': 'pathosd', '.name': 'main', enabled: '1', asn: '65001' } ];

const RUNNING = { pathosd: { instances: { instance1: { running: true, pid: 1234 } } } };

function statusEnv(replies, uciSections, opts) {
	return makeEnv(Object.assign({
		uci: uciSections || ENABLED_UCI,
		replies: Object.assign({
			'pathosd.status': STATUS,
			'service.list': RUNNING,
			'pathosd.check': (a) => ({ vip: a.vip, result: { success: false, detail: 'unexpected status 502' }, state: 'pessimized' }),
			'pathosd.drain': (a) => ({ vip: a.vip, drain: a.enable, state: a.enable ? 'pessimized' : 'announced' })
		}, replies || {})
	}, opts || {}));
}

function tableByClass(root, cls) {
	const t = findAll(root, (n) => n.tag === 'table' && hasClass(n, cls));
	assert.strictEqual(t.length, 1, 'one table ' + cls);
	return t[0];
}

function byClass(root, cls) {
	return findAll(root, (n) => hasClass(n, cls));
}

// Values made inside the vm context have its own Array/Object prototypes,
// which deepStrictEqual tells apart: compare plain copies.
function plain(v) {
	return v === undefined ? v : JSON.parse(JSON.stringify(v));
}

// The staged changes, sorted (rpcd's order does not matter here).
function staged(env) {
	return plain(env.uci.changes).sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
}

function cellTexts(rows) {
	return Array.from(rows, (r) => Array.from(r, text));
}

function badgeState(cell) {
	const b = findAll(cell, (n) => n.attrs && n.attrs['data-state'] !== undefined);
	assert.ok(b.length >= 1, 'a state badge in ' + text(cell));
	return b[0].attrs['data-state'];
}

function button(root, cls, attrs) {
	const b = findAll(root, (n) => n.tag === 'button' && hasClass(n, cls) &&
		Object.keys(attrs || {}).every((k) => n.attrs[k] === attrs[k]));
	assert.strictEqual(b.length, 1, 'one button ' + cls + ' ' + JSON.stringify(attrs));
	return b[0];
}

// What the user reads: the page, every notification and the dialog.
function seen(env, root) {
	return [ text(root) ].concat(env.ui.notes.map((n) => n.text), env.ui.modals.map((d) => d.title + ' ' + d.children.map(text).join(' '))).join('\n');
}

// -------------------------------------------------------- the UCI mapping

// Options announced for the daemon but made by another change, which the form
// offers already: taken as the daemon's (shape and default) until its
// uci_map.rs and schema have them, then checked against those.
const ANNOUNCED = { 'VIP.allow_default_route': { kind: 'Scalar', path: 'allow_default_route', default: false } };

// The option tables of crates/pathosd-core/src/config/uci_map/layout.rs: const NAME: &[Row] = &[
// ("uci_name", "json.path", Kind), ... ];
function uciRows() {
	const src = fs.readFileSync(UCI_MAP, 'utf8');
	const tables = {};
	const paths = {};
	Object.defineProperty(tables, 'paths', { value: paths });
	const re = /const ([A-Z_]+): &\[Row\] = &\[([\s\S]*?)\n\];/g;
	let m;
	while ((m = re.exec(src))) {
		const rows = {};
		const rowRe = /\(\s*"([a-z0-9_]+)",\s*"([^"]*)",\s*(Scalar|List|Pairs|OneOrList),?\s*\)/g;
		let r;
		while ((r = rowRe.exec(m[2]))) {
			rows[r[1]] = r[3];
			paths[m[1] + '.' + r[1]] = r[2];
		}
		tables[m[1]] = rows;
	}
	Object.keys(ANNOUNCED).forEach((k) => {
		const [ t, name ] = k.split('.');
		if (tables[t] && !tables[t][name]) {
			tables[t][name] = ANNOUNCED[k].kind;
			paths[k] = ANNOUNCED[k].path;
		}
	});
	return tables;
}

// The daemon's defaults, from its JSON Schema (schema/pathosd-config-v1.schema.json),
// reached through the UCI mapping: option -> JSON path -> schema default.
const SCHEMA = JSON.parse(fs.readFileSync(path.join(ROOT, 'schema/pathosd-config-v1.schema.json'), 'utf8'));
const BY_TYPE = { http: 'HTTP', https: 'HTTP', dns: 'DNS', ping: 'PING', tcp: 'TCP', udp: 'UDP', grpc: 'GRPC', exec: 'EXEC', ubus: 'UBUS' };
const TABLE_OF = { pathosd: 'GLOBAL', neighbor: 'NEIGHBOR', vip: 'VIP', check: 'CHECK' };
const SCHEMA_BASE = {
	GLOBAL: [],
	NEIGHBOR: [ 'bgp', 'neighbors', '[]' ],
	VIP: [ 'vips', '[]' ],
	CHECK: [ 'vips', '[]', 'check' ]
};

function typeDeps(o) {
	return o.deps.filter((d) => Object.keys(d).join() === 'type').map((d) => d.type);
}

function schemaDefault(table, uciName, sectionType) {
	const rows = uciRows();
	const jsonPath = rows.paths[table + '.' + uciName] || rows.paths[TABLE_OF[sectionType] + '.' + uciName];
	if (!jsonPath) return { missing: true };
	const base = SCHEMA_BASE[table] || SCHEMA_BASE.CHECK;
	let node = SCHEMA;
	for (const part of base.concat(jsonPath.split('.'))) {
		node = part === '[]' ? node.items : (node.properties || {})[part];
		if (!node) {
			const a = ANNOUNCED[table + '.' + uciName];
			return a ? { has: true, value: a.default } : { missing: true };
		}
	}
	return { has: Object.prototype.hasOwnProperty.call(node, 'default'), value: node.default };
}

// What the form shows for an unset option (of a check of `type`): a Flag
// its default ('0' unless set), a select its default (else its first
// choice), a field its default or placeholder (the type's, when it differs
// by type).
function formDefault(o, type) {
	if (o.constructor.name === 'Flag') return o.default;
	if (o.constructor.name === 'ListValue') {
		if (o.default != null) return o.default;
		return (o.keylist || [])[0] === '' ? null : (o.keylist || [])[0];
	}
	if (o.typePlaceholder) return o.typePlaceholder[type] != null ? o.typePlaceholder[type] : null;
	return o.default != null ? o.default : (o.placeholder != null ? o.placeholder : null);
}

const UNIT_NS = { ns: 1, us: 1e3, 'µs': 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };
function norm(v) {
	if (v == null) return '';
	if (typeof v === 'boolean') return v ? '1' : '0';
	if (Array.isArray(v)) return v.map(norm).join(' ');
	if (typeof v === 'object') return Object.keys(v).length ? JSON.stringify(v) : '';
	const s = String(v);
	if (/^-?[0-9]+(\.[0-9]+)?$/.test(s)) return String(Number(s));
	if (/^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$/.test(s)) {
		let ns = 0;
		s.replace(/([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)/g, (_m, n, u) => { ns += parseFloat(n) * UNIT_NS[u]; });
		return 'duration:' + ns;
	}
	return s;
}

// No default in the schema: the form may show an example. A default that
// means "nothing" (0, "", [], {}, false, 0s): the form shows nothing or the
// same. Else the same value (durations and numbers compared as values).
function sameDefault(schemaValue, shown, has) {
	if (!has) return true;
	const want = norm(schemaValue);
	const empty = want === '' || want === '0' || want === 'duration:0';
	const got = norm(shown);
	if (empty) return got === '' || got === want || (want === 'duration:0' && got === '0') || (want === '0' && got === 'duration:0');
	return got === want;
}

// ---------------------------------------------------------- fixtures

// /etc/config/pathosd of most config tests: one neighbor, one VIP, one
// anonymous check, nothing set that has a daemon default.
const BASE_UCI = [
	{ '.type': 'pathosd', '.name': 'main', enabled: '1', asn: '65001', router_id: '192.0.2.1' },
	{ '.type': 'neighbor', '.name': 'bird', address: '127.0.0.1', peer_asn: '65000' },
	{ '.type': 'vip', '.name': 'web', prefix: '192.0.2.80/32' },
	{ '.type': 'check', '.name': 'cfg0a5f56', '.anonymous': true, vip: 'web', type: 'dns', query: [ 'web.lan.' ] }
];

// A file as a router owner has it after a while: every kind of option set,
// some to their default, booleans spelled the ways the daemon takes, a list
// written as `option`, and a check of every type (http with port 8081 and
// method HEAD: the case that lost both).
const FULL_UCI = [
	{ '.type': 'pathosd', '.name': 'main', enabled: '1', asn: '65001', router_id: '192.0.2.1', local_address: '127.0.0.2',
		listen_port: '179', hold_time: '9s', graceful_restart: '1', shutdown_drain: '2s', graceful_shutdown: '1', api_listen: '127.0.0.1:59179', log_level: 'info' },
	{ '.type': 'neighbor', '.name': 'bird', enabled: '1', address: '127.0.0.1', peer_asn: '65000', port: '179', passive: '0',
		required: '1', enable_multihop: '1', multihop_ttl: '4', hold_time: '30s', error_wait_min: '2s', graceful_restart: 'yes',
		bfd: '1', bfd_desired_minimum_tx_interval: '100ms', bfd_detection_multiplier: '5', role: 'peer' },
	{ '.type': 'neighbor', '.name': 'up_1', name: 'up-1', address: '192.0.2.254', peer_asn: '65010', passive: 'on', required: '0', role: 'customer' },
	{ '.type': 'vip', '.name': 'web', enabled: '1', prefix: '192.0.2.80/32', checks_policy: 'all', fail_action: 'drain_then_withdraw',
		drain_time: '10s', community: [ '65001:100' ], large_community: '65001:1:1', require_local_address: 'true', local_interface: 'br-lan',
		lower_priority_as_path_prepend: '4', lower_priority_file: '/tmp/web.drain' },
	{ '.type': 'vip', '.name': 'dns_6', name: 'dns-6', prefix: '2001:db8::53/128', always: '1', fail_action: 'lower_priority' },
	{ '.type': 'check', '.name': 'cfg010001', '.anonymous': true, vip: 'web', type: 'http', enabled: '1', url: '/healthz', port: '8081',
		method: 'HEAD', header: [ 'Host: web.lan' ], response_code: [ '200-299' ], keep_alive: '1', interval: '2s', timeout: '500ms', rise: '2', fall: '3' },
	{ '.type': 'check', '.name': 'web_https', vip: 'web', type: 'https', url: 'https://web.lan/', port: '8443', method: 'GET',
		tls_server_name: 'web.lan', tls_insecure: '0' },
	{ '.type': 'check', '.name': 'cfg010003', '.anonymous': true, vip: 'web', type: 'dns', query: [ 'web.lan.' ], port: '5353',
		resolver: '127.0.0.1', query_type: 'AAAA', expected_rcode: 'NOERROR', expected_match: 'all' },
	{ '.type': 'check', '.name': 'web_ping', vip: 'web', type: 'ping', count: '3', ping_interval: '50ms', max_loss_ratio: '0.5', privileged: '1', dst_ip: '192.0.2.80' },
	{ '.type': 'check', '.name': 'web_tcp', vip: 'web', type: 'tcp', host: 'web.lan', port: '8081', send: 'PING', expect: 'PONG' },
	{ '.type': 'check', '.name': 'web_udp', vip: 'web', type: 'udp', port: '5300', payload_hex: '00ff', expect: 'ok' },
	{ '.type': 'check', '.name': 'web_grpc', vip: 'web', type: 'grpc', port: '50051', method: '/pkg.Health/Check', tls: '1', service: 'web', ok_code: [ 'OK' ] },
	{ '.type': 'check', '.name': 'web_exec', vip: 'web', type: 'exec', command: '/usr/bin/true', arg: [ '-v' ] },
	{ '.type': 'check', '.name': 'web_ubus', vip: 'web', type: 'ubus', object: 'network.interface.wan', method: 'status',
		args: '{"name": "wan"}', response_jq: '.up == true' }
];

const REJECTED = {
	time: '2026-11-29T11:01:30Z',
	result: 'rejected',
	errors: [
		'config check (line 14) option timeout: 2s must be less than interval 1s',
		'vip \'lonely\' (line 9): exactly one of check or checks is required (or always: true)'
	]
};
const PARTIAL = {
	time: '2026-11-29T11:03:00Z',
	result: 'partially_applied',
	errors: [
		'api.listen 192.168.1.1:80: cannot listen (Address in use (os error 98)); the API stays on http://127.0.0.1:59179 with its old settings'
	],
	needs_restart: []
};
const withReload = (r) => Object.assign(JSON.parse(JSON.stringify(STATUS)), { last_reload: r });

// A pathosd with `n` VIPs answering the paged ubus status (offset, limit,
// search, state, health) as the daemon does; any other argument is
// INVALID_ARGUMENT, except the session LuCI's endpoint adds to every call.
// `calls` gets the arguments without that session.
const STATUS_ARGS = [ 'offset', 'limit', 'search', 'state', 'health', 'compact' ];
function pagedDaemon(n, calls) {
	const vips = [];
	for (let i = 0; i < n; i++) {
		const state = i % 50 === 7 ? 'withdrawn' : (i % 20 === 3 ? 'pessimized' : 'announced');
		vips.push(Object.assign(JSON.parse(JSON.stringify(STATUS.vips[0])), {
			name: 'web-' + i, prefix: '10.' + (i >> 8) + '.' + (i & 255) + '.1/32',
			state_name: state, health_name: state === 'announced' ? 'healthy' : 'unhealthy', drain: false,
			checks: [ Object.assign({}, STATUS.vips[0].checks[0], { name: 'http_' + i }) ]
		}));
	}
	return (args) => {
		assert.ok(args.ubus_rpc_session, 'LuCI\'s endpoint adds the session');
		const a = Object.assign({}, args);
		delete a.ubus_rpc_session;
		if (Object.keys(a).some((k) => STATUS_ARGS.indexOf(k) < 0)) return { ubusStatus: 2 };
		if (calls) calls.push(a);
		const offset = a.offset || 0, limit = a.limit != null ? a.limit : 100;
		const needle = (a.search || '').toLowerCase();
		const matched = vips.filter((v) => (!needle || v.name.toLowerCase().includes(needle) || v.prefix.includes(needle)) &&
			(!a.state || v.state_name === a.state) && (!a.health || v.health_name === a.health));
		const page = matched.slice(offset, offset + limit);
		const counts = { total: n, announced: 0, pessimized: 0, withdrawn: 0, healthy: 0, unhealthy: 0, drained: 0 };
		vips.forEach((v) => { counts[v.state_name]++; counts[v.health_name]++; });
		return Object.assign({}, STATUS, {
			vips: page, vip_counts: counts, vips_matched: matched.length, offset, limit,
			next_offset: offset + page.length < matched.length ? offset + page.length : null
		});
	};
}

// main, a neighbor and N VIPs: with a tcp check each, or "always".
function manyVips(n, checked) {
	const sections = BASE_UCI.slice(0, 2);
	for (let i = 0; i < n; i++) {
		if (checked) {
			sections.push({ '.type': 'vip', '.name': 'v' + i, prefix: '10.20.' + (i >> 8) + '.' + (i & 255) + '/32', fail_action: 'withdraw' });
			sections.push({ '.type': 'check', '.name': 'v' + i + '_tcp', vip: 'v' + i, type: 'tcp', host: '127.0.0.1', port: '8081' });
		}
		else
			sections.push({ '.type': 'vip', '.name': 'v' + i, prefix: '10.' + (i >> 16) + '.' + ((i >> 8) & 255) + '.' + (i & 255) + '/32', always: '1' });
	}
	return sections;
}

function viewTests(label, src) {
	const modules = { 'pathosd.common': src.common };

	async function renderOverview(reply, replies, uciSections) {
		const env = statusEnv(Object.assign({ 'pathosd.status': reply }, replies || {}), uciSections);
		env.filename = '70_pathosd.js';
		const w = loadView(src.overview, env, modules);
		return { env, w, node: w.render(await w.load()) };
	}

	async function renderStatus(replies, uciSections, opts) {
		const env = statusEnv(replies, uciSections, opts);
		env.filename = 'status.js';
		const v = loadView(src.status, env, modules);
		const data = await v.load();
		const root = v.render(data);
		return { env, v, root };
	}

	async function renderConfig(sections, replies, opts) {
		const r = await renderConfigPage(sections, replies, opts);
		assert.ok(r.m, 'the page has a form.Map');
		return r;
	}

	async function renderConfigPage(sections, replies, opts) {
		const env = makeEnv(Object.assign({ uci: sections, replies: Object.assign({
			'pathosd.status': STATUS
		}, replies || {}) }, opts || {}));
		env.filename = 'config.js';
		const v = loadView(src.config, env, modules);
		const data = await v.load();
		const node = await v.render(data);
		return { env, v, m: env.form.pageMaps[0], node };
	}

	function sectionOf(m, type) {
		const s = m.children.filter((x) => x.sectiontype === type);
		assert.strictEqual(s.length, 1, 'one section of type ' + type);
		return s[0];
	}

	function opt(s, name) {
		const o = s.children.filter((x) => x.option === name);
		assert.strictEqual(o.length, 1, 'one option ' + name + ' in ' + s.sectiontype);
		return o[0];
	}

	function gridRow(s, sid) {
		const r = s.rows().filter((x) => x.sid === sid);
		assert.strictEqual(r.length, 1, 'one grid row ' + sid);
		const cells = {};
		r[0].cells.forEach((c) => { cells[c.option] = c.text; });
		return { title: r[0].title, cells };
	}

	// The dialog open now, as a user sees and uses it.
	function openDialog(env) {
		const modal = env.ui.modal;
		assert.ok(modal && modal.map, 'a dialog is open');
		const m = modal.map;
		const ns = m.children[0];
		const sid = ns.section;
		const w = (name) => {
			const o = ns.getOption(name);
			assert.ok(o, 'option ' + name + ' in the dialog');
			const wd = o.widget(sid);
			assert.ok(wd, 'a widget for ' + name);
			return wd;
		};
		const buttonOf = (label) => {
			const b = findAll(E('div', modal.children), (n) => n.tag === 'button' && text(n) === label);
			assert.strictEqual(b.length, 1, 'one ' + label + ' button');
			return b[0];
		};
		return {
			m, sid, w, ns, title: modal.title, node: modal.children[0],
			set(name, v) { w(name).set(v); return this; },
			add(name, item) { return w(name).add(item); },
			// Typing in a DynamicList's input without Enter: its error or null.
			type(name, text) { return w(name).type(text); },
			error(name) { return ns.getOption(name).validationError(sid); },
			active(name) { return ns.getOption(name).isActive(sid); },
			// The dialog's Save button; true when the dialog closed.
			save() { return Promise.resolve(buttonOf('Save').attrs.click({})).then(() => env.ui.modal == null); },
			cancel() { return Promise.resolve(buttonOf('Dismiss').attrs.click({})); }
		};
	}

	// The edit dialog of a grid row, or Add of a named section.
	async function dialog(env, s, sid) {
		await s.renderMoreOptionsModal(sid);
		return openDialog(env);
	}

	async function addDialog(env, s, name) {
		await s.handleAdd(null, name);
		return openDialog(env);
	}

	// Add of a check: the VIP and type chosen in the add row, then Add.
	async function addCheck(env, m, vip, type) {
		const checks = sectionOf(m, 'check');
		const row = checks.renderSectionAdd();
		const vipSel = findAll(row, (n) => hasClass(n, 'pathosd-add-vip'))[0];
		const typeSel = findAll(row, (n) => hasClass(n, 'pathosd-add-type'))[0];
		assert.ok(vipSel && typeSel, 'the add row has a VIP and a type select: ' + text(row));
		vipSel.value = vip;
		typeSel.value = type;
		await button(row, 'pathosd-add-check').attrs.click({});
		return openDialog(env);
	}

	// ------------------------------------------------------- overview

	test(label + 'overview include: VIP states and established sessions counted', async () => {
		const { env, node } = await renderOverview(STATUS);
		const table = tableByClass(node, 'pathosd-overview');
		assert.deepStrictEqual(Array.from(table.children, (tr) => Array.from(tr.children, text)), [
			[ 'VIPs', '1 announced, 1 pessimized, 0 withdrawn' ],
			[ 'BGP sessions', '1 of 2 established' ]
		]);
		env.rpc.declared.forEach((d) => assert.ok(((readGrants()[d.object]) || []).indexOf(d.method) >= 0,
			d.object + '.' + d.method + ' readable'));
	});

	test(label + 'overview include: asks pathosd for the counts only (limit 0), whatever the number of VIPs', async () => {
		const calls = [];
		const { node } = await renderOverview(pagedDaemon(1000, calls));
		assert.deepStrictEqual(plain(calls), [ { limit: 0 } ]);
		assert.ok(/VIPs930 announced, 50 pessimized, 20 withdrawn/.test(text(node)), text(node));
	});

	// Both endpoints' "not on ubus" replies (NOT_ON_UBUS): with uhttpd's, the
	// box said "pathosd did not answer the status request: error -32000:
	// Object not found" for a stopped, disabled or crashed daemon.
	for (const absent of NOT_ON_UBUS)
	test(label + 'overview include: shows why pathosd is down (disabled, stopped, refused, crashed); nothing without access; not on ubus as ' + JSON.stringify(absent), async () => {
		const down = async (svc, uciSections) => {
			const { node } = await renderOverview(absent, { 'service.list': svc }, uciSections);
			assert.ok(node, 'a box');
			const row = byClass(node, 'pathosd-down');
			assert.strictEqual(row.length, 1, text(node));
			return { state: badgeState(row[0]), text: text(row[0]) };
		};
		let d = await down({}, [ { '.type': 'pathosd', '.name': 'main', enabled: '0' } ]);
		assert.strictEqual(d.state, 'disabled');
		d = await down({});
		assert.ok(d.state === 'stopped' && /stopped/.test(d.text), d.text);
		d = await down({ pathosd: { triggers: [] } });
		assert.ok(d.state === 'refused' && /refused the configuration/.test(d.text), d.text);
		d = await down({ pathosd: { instances: { instance1: { running: false, exit_code: 101 } } } });
		assert.ok(d.state === 'crashed' && /exited with code 101/.test(d.text), d.text);
		assert.strictEqual((await renderOverview(ACCESS_DENIED)).node, null, 'no ACL: no box');
	});

	test(label + 'overview include: a rejected reload is shown until one is applied, "1 error" / "2 errors"', async () => {
		let { node } = await renderOverview(withReload(REJECTED));
		const row = byClass(node, 'pathosd-reload-rejected');
		assert.strictEqual(row.length, 1, text(node));
		assert.ok(/rejected.*\(2 errors\).*previous configuration still runs/.test(text(row[0])), text(row[0]));
		assert.ok(byClass(row[0], 'label').length === 1, 'a LuCI label');
		node = (await renderOverview(withReload(Object.assign({}, REJECTED, { errors: [ REJECTED.errors[0] ] })))).node;
		assert.ok(/\(1 error\)/.test(text(node)), text(node));
		node = (await renderOverview(withReload({ time: REJECTED.time, result: 'applied', errors: [] }))).node;
		assert.strictEqual(byClass(node, 'pathosd-reload-rejected').length, 0);
	});

	test(label + 'overview include: a reload applied only in part is shown as not applied, not as fine', async () => {
		let { node } = await renderOverview(withReload(PARTIAL));
		const row = byClass(node, 'pathosd-reload-partial');
		assert.strictEqual(row.length, 1, text(node));
		assert.ok(/partially applied.*all but 1 setting;/.test(text(row[0])), text(row[0]));
		assert.strictEqual(byClass(node, 'pathosd-reload-rejected').length, 0);
		node = (await renderOverview(withReload({ time: PARTIAL.time, result: 'applied', errors: [] }))).node;
		assert.strictEqual(byClass(node, 'pathosd-reload-partial').length, 0);
	});

	// ------------------------------------------------------- status.js

	test(label + 'status.js: peers table rows from ubus pathosd status', async () => {
		const { root } = await renderStatus();
		const rows = tableByClass(root, 'pathosd-peers').rows;
		assert.deepStrictEqual(cellTexts(rows), [
			[ 'bird', '127.0.0.1', '65000', 'established', 'up neighbor: up, 1 down', 'yes', '1h 2m 3s', '1', '0', '-' ],
			[ 'upstream', '192.0.2.254', '65010', 'active', '-', 'no', '-', '0', '2', 'connect: connection refused' ]
		]);
		assert.strictEqual(badgeState(rows[0][3]), 'established');
		assert.strictEqual(badgeState(rows[1][3]), 'active');
		assert.strictEqual(badgeState(rows[0][4]), 'up');
	});

	// /status peers[].bfd: null without BFD, else the session's state.
	test(label + 'status.js: the BFD column: state badge, the neighbor\'s state, downs, the diagnostic while not up, details as tooltip; "-" without BFD', async () => {
		const st = JSON.parse(JSON.stringify(STATUS));
		const b = st.peers[0].bfd;
		st.peers = [
			Object.assign({}, st.peers[0], { name: 'up' }),
			Object.assign({}, st.peers[0], { name: 'down', bfd: Object.assign({}, b, { state: 'down', remote_state: 'down', diagnostic: 'control detection time expired', uptime_seconds: null, downs: 2 }) }),
			Object.assign({}, st.peers[0], { name: 'init', bfd: Object.assign({}, b, { state: 'init', remote_state: 'down', diagnostic: 'no diagnostic', uptime_seconds: null, downs: 0, dropped: {} }) }),
			Object.assign({}, st.peers[0], { name: 'admin', bfd: Object.assign({}, b, { state: 'down', remote_state: 'admin_down', diagnostic: 'neighbor signaled session down', multihop: false }) }),
			Object.assign({}, st.peers[0], { name: 'off', bfd: null })
		];
		const { root } = await renderStatus({ 'pathosd.status': st });
		const rows = tableByClass(root, 'pathosd-peers').rows;
		assert.deepStrictEqual(cellTexts(rows).map((r) => [ r[0], r[4] ]), [
			[ 'up', 'up neighbor: up, 1 down' ],
			[ 'down', 'down neighbor: down, 2 downs, control detection time expired' ],
			[ 'init', 'init neighbor: down, 0 downs' ],
			[ 'admin', 'down neighbor: admin_down, 1 down, neighbor signaled session down' ],
			[ 'off', '-' ]
		]);
		assert.deepStrictEqual(rows.slice(0, 4).map((r) => badgeState(r[4])), [ 'up', 'down', 'init', 'down' ]);
		assert.strictEqual(rows[4][4], '-', 'no badge without BFD');
		const tip = (r) => findAll(r[4], (n) => hasClass(n, 'pathosd-bfd'))[0].attrs.title;
		assert.strictEqual(tip(rows[0]), 'multihop; up for 1m 58s; discriminators 7 / 9; dropped: wrong_ttl 1');
		assert.strictEqual(tip(rows[3]), 'single hop; discriminators 7 / 9; dropped: wrong_ttl 1');
		// No BFD member at all (a pathosd of before BFD): "-" too.
		delete st.peers[0].bfd;
		const r2 = await renderStatus({ 'pathosd.status': st });
		assert.strictEqual(cellTexts(tableByClass(r2.root, 'pathosd-peers').rows)[0][4], '-');
		assert.ok(!/undefined|NaN|\[object/.test(text(r2.root)));
	});

	test(label + 'status.js: VIP rows with state and health badges, prepends, communities, drain source', async () => {
		const { root } = await renderStatus();
		const rows = tableByClass(root, 'pathosd-vips').rows;
		assert.deepStrictEqual(cellTexts(rows).map((r) => r.slice(0, 9)), [
			[ 'dns', '192.168.1.53/32', 'announced', 'healthy', 'all', '0', '65001:100', '-', 'dns_query: rise threshold reached' ],
			[ 'web', '192.168.1.80/32', 'pessimized', 'unhealthy', 'web_http && tcp', '6', '65000:666 65001:1:666', 'API', 'web_http: fall threshold reached' ]
		]);
		assert.deepStrictEqual(rows.map((r) => [ badgeState(r[2]), badgeState(r[3]) ]),
			[ [ 'announced', 'healthy' ], [ 'pessimized', 'unhealthy' ] ]);
		// The drain toggle offers the opposite of the current API drain.
		assert.strictEqual(text(button(root, 'pathosd-drain', { 'data-vip': 'dns' })), 'Drain (pessimize)');
		assert.strictEqual(text(button(root, 'pathosd-drain', { 'data-vip': 'web' })), 'Undrain');
		// A drain waiting for the router's flows (drain_until_flows_below)
		// says how many are left; 0 is a count too.
		const st = JSON.parse(JSON.stringify(STATUS));
		st.vips[1].flows = 3;
		st.vips[0].drain_file = true;
		st.vips[0].flows = 0;
		const r2 = await renderStatus({ 'pathosd.status': st });
		assert.deepStrictEqual(cellTexts(tableByClass(r2.root, 'pathosd-vips').rows).map((r) => r[7]),
			[ 'file, 0 flows left', 'API, 3 flows left' ]);
		// A VIP with several prefixes shows them all.
		st.vips[0].prefixes = [ '192.168.1.53/32', 'fd00::53/128' ];
		const r3 = await renderStatus({ 'pathosd.status': st });
		assert.deepStrictEqual(cellTexts(tableByClass(r3.root, 'pathosd-vips').rows).map((r) => r[1]),
			[ '192.168.1.53/32, fd00::53/128', '192.168.1.80/32' ]);
	});

	// luci-theme-bootstrap (current, cascade.css): `.label.success` is its
	// success colour (green), `.label.warning` its warn colour (orange), and
	// `.label.important` and `.label.notice` its primary colour (blue): no
	// label class is red. A bad state must not use `important`.
	test(label + 'status.js: badges are green and orange from the theme\'s label classes, red from the theme\'s error colour, never `important` (blue)', async () => {
		const st = JSON.parse(JSON.stringify(STATUS));
		st.vips[0].state_name = 'withdrawn';
		const { root } = await renderStatus({ 'pathosd.status': st });
		const badges = findAll(root, (n) => n.attrs && n.attrs['data-state'] !== undefined);
		assert.ok(badges.length >= 6);
		const cls = {};
		badges.forEach((b) => {
			assert.strictEqual(b.attrs.style, undefined, 'no inline style on ' + b.attrs['data-state']);
			assert.ok(hasClass(b, 'label'), 'class label');
			assert.ok(!hasClass(b, 'important') && !hasClass(b, 'notice'), b.attrs['class'] + ': primary (blue) in the theme');
			cls[b.attrs['data-state']] = b.attrs['class'].split(' ').filter((c) => c !== 'label' && c !== 'pathosd-badge').join(' ');
		});
		assert.deepStrictEqual(cls, {
			established: 'success', active: 'pathosd-bad', withdrawn: 'pathosd-bad', healthy: 'success',
			pessimized: 'warning', unhealthy: 'pathosd-bad', up: 'success'
		});
		// Every BGP state has a colour: down red, being opened orange.
		const peers = [ 'idle', 'connect', 'active', 'opensent', 'openconfirm', 'established' ];
		const st2 = JSON.parse(JSON.stringify(STATUS));
		st2.peers = peers.map((p, i) => Object.assign({}, STATUS.peers[0], { name: 'p' + i, session_state: p }));
		const r2 = await renderStatus({ 'pathosd.status': st2 });
		assert.deepStrictEqual(tableByClass(r2.root, 'pathosd-peers').rows.map((r) => findAll(r[3], (n) => n.attrs && n.attrs['data-state'] !== undefined)[0].attrs['class']),
			[ 'pathosd-bad', 'pathosd-bad', 'pathosd-bad', 'warning', 'warning', 'success' ].map((c) => 'label pathosd-badge ' + c));
		// Every BFD state too: down red, coming up orange, held down on
		// purpose orange.
		const bfd = [ 'admin_down', 'down', 'init', 'up' ];
		const st3 = JSON.parse(JSON.stringify(STATUS));
		st3.peers = bfd.map((b, i) => Object.assign({}, STATUS.peers[0], { name: 'b' + i, bfd: Object.assign({}, STATUS.peers[0].bfd, { state: b }) }));
		const r3 = await renderStatus({ 'pathosd.status': st3 });
		assert.deepStrictEqual(tableByClass(r3.root, 'pathosd-peers').rows.map((r) => findAll(r[4], (n) => n.attrs && n.attrs['data-state'] !== undefined)[0].attrs['class']),
			[ 'warning', 'pathosd-bad', 'warning', 'success' ].map((c) => 'label pathosd-badge ' + c));
	});

	// The red badge's text against its background, WCAG AA for its 9.75px
	// bold text (4.5:1), with luci-theme-bootstrap's colours (cascade.css:
	// light and dark mode) and with a theme that has none of them.
	test(label + 'status.js: the red badge has 4.5:1 contrast in the light and dark bootstrap theme and without the theme\'s variables', async () => {
		const { root } = await renderStatus();
		const style = findAll(root, (n) => n.tag === 'style').map(text).join('');
		const rule = /\.label\.pathosd-bad\s*\{([^}]*)\}/.exec(style);
		assert.ok(rule, style);
		const prop = (name) => (new RegExp('(?:^|;)\\s*' + name + ':\\s*([^;]+)').exec(rule[1]) || [])[1].trim();
		const THEMES = {
			light: { '--error-color-high': '#f62b12', '--error-color-medium': '#e8210d', '--error-color-low': '#d00000', '--on-error-color': '#ffffff', '--background-color-high': '#ffffff' },
			dark: { '--error-color-high': '#d15653', '--error-color-medium': '#bf4e4c', '--error-color-low': '#b14946', '--on-error-color': '#222222', '--background-color-high': '#222222' },
			none: {}
		};
		const resolve = (v, theme) => {
			const m = /^var\((--[\w-]+)(?:,\s*(#[0-9a-f]{3,6}))?\)$/i.exec(v);
			const c = m ? (theme[m[1]] || m[2]) : v;
			return c.length === 4 ? '#' + c.slice(1).split('').map((x) => x + x).join('') : c;
		};
		const lum = (hex) => {
			const c = hex.slice(1).match(/../g).map((x) => parseInt(x, 16) / 255).map((v) => (v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4)));
			return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
		};
		const contrast = (a, b) => (Math.max(lum(a), lum(b)) + 0.05) / (Math.min(lum(a), lum(b)) + 0.05);
		const got = {};
		Object.keys(THEMES).forEach((t) => {
			got[t] = Math.round(contrast(resolve(prop('background-color'), THEMES[t]), resolve(prop('color'), THEMES[t])) * 100) / 100;
		});
		assert.ok(Object.keys(got).every((t) => got[t] >= 4.5), JSON.stringify(got));
	});

	// luci-theme-bootstrap's .cbi-section-create is an inline-flex row that
	// does not wrap: at 390 px the state and health filters were cut off.
	test(label + 'status.js, config.js: the search and filter rows wrap on a narrow screen (a wrapping flex row, items that may shrink)', async () => {
		const { root } = await renderStatus();
		const cfg = await renderConfig(BASE_UCI);
		for (const node of [ root, cfg.node ]) {
			const style = findAll(node, (n) => n.tag === 'style').map(text).join('');
			assert.ok(/\.cbi-section-create\.pathosd-filters\s*\{[^}]*display:\s*flex;[^}]*flex-wrap:\s*wrap/.test(style), style);
			assert.ok(/\.pathosd-filters > \*\s*\{[^}]*min-width:\s*0/.test(style), style);
			const rows = byClass(node, 'pathosd-filters');
			assert.ok(rows.length >= 1 && rows.every((r) => hasClass(r, 'cbi-section-create')), text(node).slice(0, 80));
		}
	});

	test(label + 'status.js: a VIP whose address is not local says so next to its health', async () => {
		const st = JSON.parse(JSON.stringify(STATUS));
		st.vips[0].local_address_assigned = false;
		st.vips[0].health_name = 'unhealthy';
		const { root } = await renderStatus({ 'pathosd.status': st });
		const rows = tableByClass(root, 'pathosd-vips').rows;
		assert.strictEqual(text(rows[0][3]), 'unhealthy address not local');
		assert.strictEqual(text(rows[1][3]), 'unhealthy', 'local_address_assigned null: no note');
	});

	test(label + 'status.js: a withdrawn VIP that was never healthy says so', async () => {
		const st = JSON.parse(JSON.stringify(STATUS));
		Object.assign(st.vips[0], { state_name: 'withdrawn', health_name: 'unhealthy', transitions: { withdrawn: 0, announced: 0, pessimized: 0 }, last_transition_reason: 'initial' });
		Object.assign(st.vips[1], { state_name: 'withdrawn', transitions: { withdrawn: 1, announced: 1, pessimized: 0 } });
		const { root } = await renderStatus({ 'pathosd.status': st });
		const rows = tableByClass(root, 'pathosd-vips').rows;
		assert.ok(/^withdrawn never healthy yet/.test(text(rows[0][2])), text(rows[0][2]));
		assert.strictEqual(text(rows[1][2]), 'withdrawn', 'withdrawn after being announced: no note');
	});

	test(label + 'status.js: a VIP that damping suppresses says damped, with its penalty and reuse time as tooltip', async () => {
		const st = JSON.parse(JSON.stringify(STATUS));
		Object.assign(st.vips[0], { state_name: 'withdrawn', damping: { suppressed: true, penalty: 2333, last_flap_time: '2026-11-29T11:02:00Z', reuse_time: '2026-11-29T11:20:00Z' } });
		Object.assign(st.vips[1], { damping: { suppressed: false, penalty: 1000, last_flap_time: '2026-11-29T11:02:00Z', reuse_time: null } });
		const { root } = await renderStatus({ 'pathosd.status': st });
		const rows = tableByClass(root, 'pathosd-vips').rows;
		assert.strictEqual(text(rows[0][2]), 'withdrawn damped');
		assert.ok(/penalty 2333/.test(rows[0][2].children[2].attrs.title), rows[0][2].children[2].attrs.title);
		assert.ok(!/damped/.test(text(rows[1][2])), 'not suppressed: no note');
	});

	test(label + 'status.js: one row per check; "Last run" is relative to the router clock, local time as tooltip', async () => {
		const { root } = await renderStatus();
		const rows = tableByClass(root, 'pathosd-checks').rows;
		// The router's now: start_time + uptime = 2026-11-29T11:02:05Z.
		assert.deepStrictEqual(cellTexts(rows).map((r) => r.slice(0, 8)), [
			[ 'dns', 'dns_query', 'dns', 'healthy', '12 / 0', 'pass (1.25 ms)', 'NOERROR, 1 answer', '3s ago' ],
			[ 'web', 'web_http', 'http', 'unhealthy', '0 / 4', 'fail (3.5 ms)', 'unexpected status 502 (want [200-399])', '4s ago' ],
			[ 'web', 'tcp', 'tcp', 'healthy', '30 / 0', '-', '-', '-' ]
		]);
		assert.strictEqual(rows[0][7].attrs.title, new Date('2026-11-29T11:02:02Z').toLocaleString());
	});

	test(label + 'status.js: summary line and 5 s poll that re-renders from a new status', async () => {
		const { env, root } = await renderStatus();
		assert.ok(/Router ID: 192\.168\.1\.1/.test(text(root)), text(root));
		assert.ok(/Uptime: 1d 2h 3m 4s/.test(text(root)), 'uptime 93784 s');
		assert.strictEqual(env.poll.added.length, 1);
		assert.strictEqual(env.poll.added[0].interval, 5);
		const next = JSON.parse(JSON.stringify(STATUS));
		next.vips[0].state_name = 'withdrawn';
		next.peers = [];
		env.rpc.replies['pathosd.status'] = next;
		await env.poll.added[0].fn();
		assert.strictEqual(badgeState(tableByClass(root, 'pathosd-vips').rows[0][2]), 'withdrawn');
		const peers = tableByClass(root, 'pathosd-peers');
		assert.deepStrictEqual(plain(peers.rows), []);
		assert.strictEqual(text(peers.placeholder), 'No BGP neighbors configured');
	});

	test(label + 'status.js: 1,000 VIPs: pages of 50 from the paged ubus status, counts over all, search and state filter', async () => {
		const calls = [];
		const { env, root } = await renderStatus({ 'pathosd.status': pagedDaemon(1000, calls) });
		const vipNames = () => cellTexts(tableByClass(root, 'pathosd-vips').rows).map((r) => r[0]);
		assert.deepStrictEqual(plain(calls[0]), { offset: 0, limit: 50 }, 'first page');
		assert.strictEqual(vipNames().length, 50);
		assert.strictEqual(vipNames()[0], 'web-0');
		assert.strictEqual(tableByClass(root, 'pathosd-checks').rows.length, 50, 'the checks of this page');
		assert.ok(/1000 VIPs: 930 announced, 50 pessimized, 20 withdrawn; 70 unhealthy, 0 drained/.test(text(root)), text(byClass(root, 'pathosd-counts')[0]));
		assert.ok(/VIPs 1–50 of 1000/.test(text(root)), text(root));
		await button(root, 'pathosd-next').attrs.click({});
		assert.strictEqual(vipNames()[0], 'web-50');
		assert.ok(/VIPs 51–100 of 1000/.test(text(root)));
		await button(root, 'pathosd-prev').attrs.click({});
		assert.strictEqual(vipNames()[0], 'web-0');
		assert.strictEqual(button(root, 'pathosd-prev').attrs.disabled, '', 'no page before the first');
		// Search: case-insensitive, name or prefix, from the first page.
		await findAll(root, (n) => hasClass(n, 'pathosd-search'))[0].attrs.input({ target: { value: 'WEB-99' } });
		assert.deepStrictEqual(vipNames(), [ 'web-99', 'web-990', 'web-991', 'web-992', 'web-993', 'web-994', 'web-995', 'web-996', 'web-997', 'web-998', 'web-999' ]);
		assert.deepStrictEqual(plain(calls[calls.length - 1]), { offset: 0, limit: 50, search: 'WEB-99' });
		assert.strictEqual(button(root, 'pathosd-next').attrs.disabled, '', 'one page');
		await findAll(root, (n) => hasClass(n, 'pathosd-search'))[0].attrs.input({ target: { value: '' } });
		await findAll(root, (n) => hasClass(n, 'pathosd-state'))[0].attrs.change({ target: { value: 'withdrawn' } });
		assert.strictEqual(vipNames().length, 20);
		assert.ok(/VIPs 1–20 of 20/.test(text(root)));
		// The poll keeps the page and filter.
		await env.poll.added[0].fn();
		assert.deepStrictEqual(plain(calls[calls.length - 1]), { offset: 0, limit: 50, state: 'withdrawn' });
		assert.ok(calls.every((c) => c.limit === 50), 'never all VIPs at once');
	});

	test(label + 'status.js: "Check now" calls ubus pathosd check {vip} and {vip, check}', async () => {
		const { env, root } = await renderStatus();
		const before = env.rpc.calls.length;
		await button(root, 'pathosd-check', { 'data-vip': 'web' }).attrs.click({});
		const calls = env.rpc.calls.slice(before);
		assert.deepStrictEqual(calls[0], { object: 'pathosd', method: 'check', args: { vip: 'web' } });
		// ...then refreshes at once.
		assert.ok(calls.some((c) => c.method === 'status'), 'status re-read after the check');
		const notes = byClass(root, 'pathosd-result');
		assert.strictEqual(notes.length, 1);
		assert.ok(hasClass(notes[0], 'info'));
		assert.ok(/failed \(unexpected status 502\), VIP state pessimized/.test(text(notes[0])), text(notes[0]));

		await button(root, 'pathosd-check-one', { 'data-vip': 'web', 'data-check': 'tcp' }).attrs.click({});
		assert.deepStrictEqual(env.rpc.calls.filter((c) => c.method === 'check')[1],
			{ object: 'pathosd', method: 'check', args: { vip: 'web', check: 'tcp' } });
	});

	test(label + 'status.js: drain toggle calls ubus pathosd drain {vip, enable}; results replace each other', async () => {
		const { env, root } = await renderStatus();
		await button(root, 'pathosd-drain', { 'data-vip': 'dns' }).attrs.click({});
		await button(root, 'pathosd-drain', { 'data-vip': 'web' }).attrs.click({});
		assert.deepStrictEqual(env.rpc.calls.filter((c) => c.method === 'drain'), [
			{ object: 'pathosd', method: 'drain', args: { vip: 'dns', enable: true } },
			{ object: 'pathosd', method: 'drain', args: { vip: 'web', enable: false } }
		]);
		// One result on the page, the last one: notices do not pile up.
		const notes = byClass(root, 'pathosd-result');
		assert.deepStrictEqual(notes.map(text), [ 'Undrain web: not draining, VIP state announced' ]);
		assert.deepStrictEqual(env.ui.notes, [], 'no global notifications');
	});

	test(label + 'status.js: a failed call says what happened in words, with no JS stack frame; a VIP gone is said so and the table refreshed at once', async () => {
		const st = JSON.parse(JSON.stringify(STATUS));
		st.vips.push(Object.assign(JSON.parse(JSON.stringify(st.vips[0])), { name: 'lonely', checks: [] }));
		const { env, root } = await renderStatus({
			'pathosd.status': st,
			'pathosd.drain': (a) => (a.vip === 'lonely' ? { ubusStatus: 4 } : { vip: a.vip, drain: a.enable, state: 'pessimized' }),
			'pathosd.check': { ubusStatus: 9 }
		});
		// The VIP is gone from the daemon: the next status has no "lonely".
		env.rpc.replies['pathosd.status'] = STATUS;
		const statusCalls = () => env.rpc.calls.filter((c) => c.method === 'status').length;
		const before = statusCalls();
		await button(root, 'pathosd-drain', { 'data-vip': 'lonely' }).attrs.click({});
		let note = byClass(root, 'pathosd-result');
		assert.strictEqual(note.length, 1);
		assert.ok(hasClass(note[0], 'danger'));
		assert.ok(/^Drain lonely: VIP lonely is not in the running pathosd \(deleted or renamed/.test(text(note[0])), text(note[0]));
		assert.ok(statusCalls() > before, 'the table is refreshed at once');
		assert.deepStrictEqual(cellTexts(tableByClass(root, 'pathosd-vips').rows).map((r) => r[0]), [ 'dns', 'web' ]);
		// Shown where the user is: a dialog.
		assert.ok(env.ui.modal && /VIP lonely is not in the running pathosd/.test(env.ui.modal.children.map(text).join('')));
		await button(root, 'pathosd-check', { 'data-vip': 'web' }).attrs.click({});
		note = byClass(root, 'pathosd-result');
		assert.ok(hasClass(note[0], 'danger') && /^Checks of web: pathosd is busy or refused it/.test(text(note[0])), text(note[0]));
		// pathosd gone from ubus since the page was drawn, as uhttpd's
		// endpoint says it (JSON-RPC -32000): not running, not "error -32000".
		env.rpc.replies['pathosd.drain'] = NOT_ON_UBUS[1];
		await button(root, 'pathosd-drain', { 'data-vip': 'web' }).attrs.click({});
		note = byClass(root, 'pathosd-result');
		assert.ok(hasClass(note[0], 'danger') && /^Undrain web: pathosd is not running \(not on ubus\)/.test(text(note[0])), text(note[0]));
		const all = seen(env, root);
		assert.ok(!/ at |rpc\.js|ClassConstructor|handleCallReply|RPC call to|ubus code/.test(all), 'no stack frame or rpc.js wording:\n' + all);
		assert.ok(env.rpc.declared.every((d) => d.reject), 'every call rejects on a ubus error');
	});

	// The daemon answers NOT_FOUND for a check it does not have (renamed in
	// the file and reloaded): the page said the VIP was gone.
	test(label + 'status.js: "Check now" on a check the running pathosd no longer has names the check, not its VIP', async () => {
		const { env, root } = await renderStatus({
			'pathosd.check': (a) => (a.check === 'tcp' ? { ubusStatus: 4 } : { vip: a.vip, result: { success: true, detail: 'ok' }, state: 'announced' })
		});
		await button(root, 'pathosd-check-one', { 'data-vip': 'web', 'data-check': 'tcp' }).attrs.click({});
		const note = text(byClass(root, 'pathosd-result')[0]);
		assert.ok(/^Check tcp of web: VIP web has no check tcp in the running pathosd \(renamed or deleted/.test(note), note);
		assert.ok(/VIP web has no check tcp/.test(text(E('div', env.ui.modal.children))));
		// A VIP gone is still said so.
		env.rpc.replies['pathosd.check'] = { ubusStatus: 4 };
		env.rpc.replies['pathosd.status'] = Object.assign(JSON.parse(JSON.stringify(STATUS)), { vips: [ STATUS.vips[0] ] });
		await button(root, 'pathosd-check-one', { 'data-vip': 'web', 'data-check': 'tcp' }).attrs.click({});
		assert.ok(/VIP web is not in the running pathosd/.test(text(byClass(root, 'pathosd-result')[0])), text(byClass(root, 'pathosd-result')[0]));
	});

	test(label + 'status.js: the result of an action goes after 30 s (at the next refresh), not at once and not never', async () => {
		const { env, root } = await renderStatus();
		await button(root, 'pathosd-drain', { 'data-vip': 'dns' }).attrs.click({});
		assert.strictEqual(byClass(root, 'pathosd-result').length, 1);
		await env.poll.added[0].fn();
		env.clockSkew = 29000;
		await env.poll.added[0].fn();
		assert.strictEqual(byClass(root, 'pathosd-result').length, 1, 'still there at 29 s');
		env.clockSkew = 30000;
		await env.poll.added[0].fn();
		assert.strictEqual(byClass(root, 'pathosd-result').length, 0, 'gone at 30 s');
	});

	test(label + 'status.js: Drain says it pessimizes (its label and title), Undrain what it ends', async () => {
		const { root } = await renderStatus();
		const drain = button(root, 'pathosd-drain', { 'data-vip': 'dns' });
		assert.strictEqual(text(drain), 'Drain (pessimize)');
		assert.ok(/Pessimize this VIP: it stays announced, with the AS-path prepends and communities of lower priority/.test(drain.attrs.title), drain.attrs.title);
		assert.ok(/End the drain/.test(button(root, 'pathosd-drain', { 'data-vip': 'web' }).attrs.title));
	});

	test(label + 'status.js: a call the ACL refuses says so in words', async () => {
		// An ACL that grants no drain to a login the page takes as a writer.
		const acl = JSON.parse(JSON.stringify(ACL));
		acl['luci-app-pathosd'].write.ubus.pathosd = [ 'check' ];
		const { env, root } = await renderStatus({}, null, { acl, role: 'write' });
		await button(root, 'pathosd-drain', { 'data-vip': 'dns' }).attrs.click({});
		const notes = byClass(root, 'pathosd-result');
		assert.deepStrictEqual(notes.map((n) => [ text(n), hasClass(n, 'danger') ]),
			[ [ 'Drain dns: access denied: this LuCI login may not do that (luci-app-pathosd write access is needed)', true ] ]);
		assert.ok(!/ at |ClassConstructor|RPC call to/.test(seen(env, root)));
	});

	for (const absent of NOT_ON_UBUS)
	test(label + 'status.js: daemon not on ubus: says whether it is disabled, stopped, refused, crashed or starting; not on ubus as ' + JSON.stringify(absent), async () => {
		const down = (svc, uciSections) => renderStatus({ 'pathosd.status': absent, 'service.list': svc }, uciSections).then((r) => {
			const d = byClass(r.root, 'pathosd-down');
			assert.strictEqual(d.length, 1, text(r.root));
			return { r, state: d[0].attrs['data-service'], text: text(d[0]) };
		});
		let d = await down({}, [ { '.type': 'pathosd', '.name': 'main', enabled: '0' } ]);
		assert.strictEqual(d.state, 'disabled');
		assert.ok(/disabled: tick Enabled under Configuration/.test(d.text), d.text);
		const vips = tableByClass(d.r.root, 'pathosd-vips');
		assert.deepStrictEqual(plain(vips.rows), []);
		assert.strictEqual(text(vips.placeholder), 'No data');

		// Stopped by the user (procd has no such service): no guess at an
		// invalid configuration.
		d = await down({});
		assert.strictEqual(d.state, 'stopped');
		assert.ok(/its service is not running: it was stopped/.test(d.text) && !/invalid|refused/.test(d.text), d.text);

		// The init script refused to start it: the service, no instance.
		d = await down({ pathosd: { triggers: [ [ 'config.change', [] ] ], validate: [] } });
		assert.strictEqual(d.state, 'refused');
		assert.ok(/init script did not start it: it refused the configuration/.test(d.text), d.text);

		d = await down({ pathosd: { instances: { instance1: { running: false, exit_code: 1 } } } });
		assert.strictEqual(d.state, 'crashed');
		assert.ok(/exited with code 1 and procd stopped restarting it/.test(d.text), d.text);

		d = await down({ pathosd: { instances: { instance1: { running: true, pid: 4242 } } } });
		assert.strictEqual(d.state, 'running');
		assert.ok(/runs \(PID 4242\) but is not \(yet\) registered on ubus/.test(d.text), d.text);
	});

	test(label + 'status.js, overview: pathosd on ubus that refuses the status request is said so, not "not registered"', async () => {
		const { root } = await renderStatus({ 'pathosd.status': { ubusStatus: 2 } });
		const d = byClass(root, 'pathosd-down');
		assert.strictEqual(d.length, 1, text(root));
		assert.strictEqual(text(d[0]), 'pathosd did not answer the status request: pathosd refused the request (invalid arguments)');
		const { node } = await renderOverview({ ubusStatus: 2 });
		assert.ok(/Serviceerror pathosd did not answer the status request: pathosd refused the request/.test(text(node)), text(node));
	});

	test(label + 'status.js: a rejected reload is shown prominently until a later one is applied', async () => {
		const { env, root } = await renderStatus({ 'pathosd.status': withReload(REJECTED) });
		const banner = byClass(root, 'pathosd-reload-rejected');
		assert.strictEqual(banner.length, 1, text(root));
		assert.ok(hasClass(banner[0], 'alert-message') && hasClass(banner[0], 'danger'));
		assert.ok(/still runs the previous one/.test(text(banner[0])));
		assert.deepStrictEqual(findAll(banner[0], (n) => n.tag === 'li').map(text), REJECTED.errors);
		// The first thing on the page.
		const order = findAll(root, (n) => hasClass(n, 'pathosd-reload') || hasClass(n, 'pathosd-summary-box'));
		assert.ok(hasClass(order[0], 'pathosd-reload'));

		env.rpc.replies['pathosd.status'] = withReload({ time: '2026-11-29T11:05:00Z', result: 'applied', errors: [] });
		await env.poll.added[0].fn();
		assert.strictEqual(byClass(root, 'pathosd-reload-rejected').length, 0);
	});

	test(label + 'status.js: a reload applied only in part says what was not applied until a later one is applied', async () => {
		const { env, root } = await renderStatus({ 'pathosd.status': withReload(PARTIAL) });
		const banner = byClass(root, 'pathosd-reload-partial');
		assert.strictEqual(banner.length, 1, text(root));
		assert.ok(hasClass(banner[0], 'alert-message') && hasClass(banner[0], 'warning'));
		assert.ok(/applied the configuration only in part/.test(text(banner[0])), text(banner[0]));
		assert.deepStrictEqual(findAll(banner[0], (n) => n.tag === 'li').map(text), PARTIAL.errors);
		assert.strictEqual(byClass(root, 'pathosd-reload-rejected').length, 0);
		env.rpc.replies['pathosd.status'] = withReload({ time: '2026-11-29T11:05:00Z', result: 'applied', errors: [] });
		await env.poll.added[0].fn();
		assert.strictEqual(byClass(root, 'pathosd-reload-partial').length, 0);
	});

	test(label + 'status.js: the OTLP exporter\'s state per signal under the summary, and nothing while nothing is exported', async () => {
		const otel = {
			exported: 12, failed: 3, dropped: 1, queued: 2, spans_dropped: 0, logs_dropped: 0,
			metrics: { endpoint: 'http://192.0.2.10:4318/v1/metrics', queued: 2,
				last_error: 'connect: connection refused', next_try_in_ms: 2500 },
			traces: { endpoint: 'http://192.0.2.10:4318/v1/traces', queued: 0, last_error: null, next_try_in_ms: null },
			logs: null
		};
		const doc = Object.assign(JSON.parse(JSON.stringify(STATUS)), { otel });
		const { env, root } = await renderStatus({ 'pathosd.status': doc });
		const box = byClass(root, 'pathosd-otel');
		assert.strictEqual(box.length, 1, text(root));
		assert.ok(/OTLP export: 12 exported, 3 failed attempts, 1 dropped/.test(text(box[0])), text(box[0]));
		const items = findAll(box[0], (n) => n.tag === 'li');
		assert.deepStrictEqual(items.map(text), [
			'Metrics \u2192 http://192.0.2.10:4318/v1/metrics: failing (connect: connection refused), next try in 3s, 2 requests queued',
			'Traces \u2192 http://192.0.2.10:4318/v1/traces: accepted, 0 requests queued'
		]);
		assert.ok(hasClass(items[0], 'pathosd-otel-failing') && hasClass(items[1], 'pathosd-otel-ok'));
		// Right under the summary.
		const order = findAll(root, (n) => hasClass(n, 'pathosd-summary-box') || hasClass(n, 'pathosd-otel-box'));
		assert.ok(hasClass(order[0], 'pathosd-summary-box') && hasClass(order[1], 'pathosd-otel-box'));

		env.rpc.replies['pathosd.status'] = Object.assign(JSON.parse(JSON.stringify(STATUS)), { otel: null });
		await env.poll.added[0].fn();
		assert.strictEqual(byClass(root, 'pathosd-otel').length, 0);
	});

	test(label + 'status.js: read-only page (no Save/Apply/Reset)', async () => {
		const { v } = await renderStatus();
		assert.strictEqual(v.handleSave, null);
		assert.strictEqual(v.handleSaveApply, null);
		assert.strictEqual(v.handleReset, null);
	});

	// ---------------------------------------------------------- the ACL

	// rpcd's acl.d grants each role what it lists: the views' reads in
	// `read`, their actions in `write`, and nothing no view calls.
	test(label + 'views: the ACL grants exactly what the views call: reads to the read role, check and drain to write only', async () => {
		const acl = ACL['luci-app-pathosd'];
		const st = await renderStatus();
		const cfg = await renderConfig(BASE_UCI);
		const ov = await renderOverview(STATUS);
		// uci.js's calls and the views' own uci get and changes are
		// luci-base's (LUCI_BASE_ACL), which every LuCI login has.
		const declared = st.env.rpc.declared.concat(cfg.env.rpc.declared, ov.env.rpc.declared).filter((d) => {
			if (d.object !== 'uci') return true;
			assert.ok(LUCI_BASE_ACL['luci-base'].read.ubus.uci.indexOf(d.method) >= 0, 'uci ' + d.method + ' is luci-base\'s');
			return false;
		});
		const WRITES = [ 'pathosd.check', 'pathosd.drain' ];
		const want = { read: {}, write: {} };
		declared.forEach((d) => {
			const role = WRITES.indexOf(d.object + '.' + d.method) >= 0 ? 'write' : 'read';
			want[role][d.object] = Array.from(new Set((want[role][d.object] || []).concat([ d.method ]))).sort();
		});
		const granted = (role) => {
			const out = {};
			Object.keys(acl[role].ubus || {}).forEach((o) => { out[o] = acl[role].ubus[o].slice().sort(); });
			return out;
		};
		assert.deepStrictEqual(granted('read'), want.read, 'read grants = the reads the views make');
		assert.deepStrictEqual(granted('write'), want.write, 'write grants = the actions the views make');
		assert.deepStrictEqual(want.read, { pathosd: [ 'status' ], 'pathosd-staged': [ 'size', 'validate' ], service: [ 'list' ] });
		assert.deepStrictEqual(acl.read.uci, [ 'pathosd' ]);
		assert.deepStrictEqual(acl.write.uci, [ 'pathosd' ]);
	});

	test(label + 'views: a read-only login sees the pages (every read call granted), and cannot check or drain', async () => {
		const { env, root } = await renderStatus({}, null, { acl: ACL, role: 'read' });
		assert.ok(tableByClass(root, 'pathosd-vips').rows.length === 2, 'status read');
		const cfg = await renderConfig(BASE_UCI, {}, { acl: ACL, role: 'read' });
		assert.ok(cfg.node);
		assert.deepStrictEqual(plain(await cfg.env.rpc.declare({ object: 'pathosd-staged', method: 'validate', reject: true })()),
			{ staged: false }, 'the check granted to read');
		const ov = await renderOverview(STATUS);
		assert.ok(ov.node);
		// Check now and Drain are disabled for it, as LuCI disables Save.
		const actions = findAll(root, (n) => n.tag === 'button' && /pathosd-(check|drain)/.test(n.attrs['class']));
		assert.ok(actions.length === 7 && actions.every((b) => b.attrs.disabled === '' && /write access/.test(b.attrs.title)),
			JSON.stringify(actions.map((b) => [ b.attrs['class'], b.attrs.disabled ])));
		const w = await renderStatus({}, null, { acl: ACL, role: 'write' });
		assert.ok(findAll(w.root, (n) => n.tag === 'button' && /pathosd-drain/.test(n.attrs['class'])).every((b) => b.attrs.disabled == null));
		await button(w.root, 'pathosd-drain', { 'data-vip': 'dns' }).attrs.click({});
		assert.ok(/^Drain dns: draining/.test(text(byClass(w.root, 'pathosd-result')[0])));
		assert.ok(env);
	});

	// ---------------------------------------------------------- config.js

	test(label + 'config.js: form.Map(pathosd) with NamedSection main and GridSections neighbor, vip, check', async () => {
		const { env, m } = await renderConfig(BASE_UCI);
		assert.deepStrictEqual(env.uci.loaded.slice(0, 1), [ 'pathosd' ]);
		assert.strictEqual(m.config, 'pathosd');
		assert.deepStrictEqual(m.children.map((s) => [ s.constructor.name, s.sectiontype ].concat(s.section ? [ s.section ] : [])), [
			[ 'NamedSection', 'pathosd', 'main' ],
			[ 'GridSection', 'neighbor' ],
			[ 'GridSection', 'vip' ],
			[ 'GridSection', 'check' ]
		]);
	});

	test(label + 'config.js: ListValues for fail_action, check type and log_level; DynamicLists for communities', async () => {
		const { m } = await renderConfig(BASE_UCI);
		const vip = sectionOf(m, 'vip');
		const check = sectionOf(m, 'check');
		const fa = opt(vip, 'fail_action');
		assert.strictEqual(fa.constructor.name, 'ListValue');
		assert.deepStrictEqual(fa.keylist.slice().sort(), [ 'drain_then_withdraw', 'lower_priority', 'withdraw' ]);
		const type = opt(check, 'type');
		assert.strictEqual(type.constructor.name, 'ListValue');
		assert.deepStrictEqual(plain(type.keylist), [ 'http', 'https', 'dns', 'ping', 'tcp', 'udp', 'grpc', 'exec', 'ubus' ]);
		assert.deepStrictEqual(plain(opt(sectionOf(m, 'pathosd'), 'log_level').keylist), [ 'error', 'warn', 'info', 'debug' ]);
		[ 'community', 'large_community', 'lower_priority_community', 'lower_priority_large_community', 'service', 'interface' ]
			.forEach((n) => assert.strictEqual(opt(vip, n).constructor.name, 'DynamicList', n));
		assert.strictEqual(opt(sectionOf(m, 'pathosd'), 'enabled').constructor.name, 'Flag');
		assert.strictEqual(opt(sectionOf(m, 'pathosd'), 'enabled').rmempty, false, 'enabled is always written');
	});

	test(label + 'config.js: every option is one the daemon reads, list-valued exactly where it takes `list`, one form option per UCI option', async () => {
		const rows = uciRows();
		[ 'GLOBAL', 'NEIGHBOR', 'VIP', 'CHECK', 'HTTP', 'DNS', 'PING', 'TCP', 'UDP', 'GRPC', 'EXEC', 'UBUS' ]
			.forEach((t) => assert.ok(rows[t] && Object.keys(rows[t]).length > 0, 'table ' + t + ' in uci_map/layout.rs'));
		const { m } = await renderConfig(BASE_UCI);
		const problems = [];
		const kindOk = (o, kind) => (o.constructor.name === 'DynamicList') === (kind === 'List' || kind === 'Pairs' || kind === 'OneOrList');
		function against(sectionType, table, extra) {
			const seenUci = {};
			sectionOf(m, sectionType).children.forEach((o) => {
				const uciName = o.ucioption || o.option;
				// Two form options for one UCI option: form.js removes the
				// value of the hidden one when saving.
				if (seenUci[uciName]) problems.push(sectionType + ' option ' + uciName + ' has two form options');
				seenUci[uciName] = true;
				if (extra.indexOf(o.option) >= 0) return;
				const types = typeDeps(o);
				const tables = types.length ? types.map((t) => BY_TYPE[t]) : [ table ];
				tables.forEach((tn) => {
					const kind = rows[tn][uciName] || rows[table][uciName];
					if (!kind) problems.push(sectionType + ' option ' + uciName + ' is not in ' + tn);
					else if (!kindOk(o, kind)) problems.push(sectionType + ' option ' + uciName + ' is ' + o.constructor.name + ' but ' + kind + ' in ' + tn);
				});
			});
		}
		against('pathosd', 'GLOBAL', [ 'enabled' ]);
		against('neighbor', 'NEIGHBOR', [ 'enabled' ]);
		against('vip', 'VIP', [ 'enabled' ]);
		against('check', 'CHECK', [ 'vip', 'enabled' ]);
		assert.deepStrictEqual(problems, []);
		// Type options show for every type that has them, and only then.
		sectionOf(m, 'check').children.forEach((o) => {
			if (rows.CHECK[o.option] || o.option === 'vip' || o.option === 'enabled') return;
			assert.ok(o.deps.length > 0 && o.deps.every((d) => Object.keys(d).join() === 'type'), o.option + ' depends on type');
			const want = Object.keys(BY_TYPE).filter((t) => rows[BY_TYPE[t]][o.ucioption || o.option]);
			assert.deepStrictEqual(typeDeps(o).slice().sort(), want.sort(), o.option + ' shown for the types that take it');
		});
	});

	test(label + 'config.js: every default the form shows is the daemon\'s (schema defaults, option by option)', async () => {
		const { m } = await renderConfig(BASE_UCI);
		const problems = [];
		let compared = 0;
		m.children.forEach((s) => s.children.forEach((o) => {
			const uciName = o.ucioption || o.option;
			// The section switches: the daemon reads a neighbor, VIP or
			// check unless `enabled` is 0; the init script starts nothing
			// unless main's `enabled` is on.
			if (uciName === 'enabled') {
				const want = s.sectiontype === 'pathosd' ? '0' : '1';
				if (o.default !== want) problems.push(s.sectiontype + '.enabled: form ' + o.default + ', daemon ' + want);
				return;
			}
			if (s.sectiontype === 'check' && uciName === 'vip') return;
			const types = typeDeps(o);
			const places = types.length ? types.map((t) => [ BY_TYPE[t], t ]) : [ [ TABLE_OF[s.sectiontype], null ] ];
			places.forEach(([ table, type ]) => {
				const d = schemaDefault(table, uciName, s.sectiontype);
				if (d.missing) { problems.push(s.sectiontype + ' ' + uciName + ': not in the schema'); return; }
				const shown = formDefault(o, type);
				compared++;
				if (!sameDefault(d.value, shown, d.has))
					problems.push(s.sectiontype + (type ? '[' + type + ']' : '') + ' option ' + uciName + ': form shows ' +
						JSON.stringify(shown) + ', the daemon\'s default is ' + JSON.stringify(d.has ? d.value : '(none)'));
			});
		}));
		assert.deepStrictEqual(problems, []);
		assert.ok(compared > 60, compared + ' options compared');
	});

	test(label + 'config.js: every main and neighbor option the daemon reads from UCI is in the form', async () => {
		const { m } = await renderConfig(BASE_UCI);
		const rows = uciRows();
		const offered = { GLOBAL: new Set(), NEIGHBOR: new Set() };
		m.children.forEach((s) => s.children.forEach((o) => {
			const t = TABLE_OF[s.sectiontype];
			if (offered[t]) offered[t].add(o.ucioption || o.option);
		}));
		// Left to the file on purpose: the API's connection timeouts and the
		// log format are tuning a router owner does not meet in a form.
		// Anything else the daemon reads must be offered.
		const expert = new Set([ 'GLOBAL.api_read_header_timeout', 'GLOBAL.api_read_timeout',
			'GLOBAL.api_write_timeout', 'GLOBAL.api_idle_timeout', 'GLOBAL.log_timestamps', 'GLOBAL.log_syslog',
			// A collector per signal is for a fleet's own pipeline, set in the file.
			'GLOBAL.otel_metrics_enabled', 'GLOBAL.otel_metrics_endpoint', 'GLOBAL.otel_metrics_insecure', 'GLOBAL.otel_metrics_header', 'GLOBAL.otel_traces_enabled', 'GLOBAL.otel_traces_endpoint', 'GLOBAL.otel_traces_insecure', 'GLOBAL.otel_traces_header', 'GLOBAL.otel_logs_enabled', 'GLOBAL.otel_logs_endpoint', 'GLOBAL.otel_logs_insecure', 'GLOBAL.otel_logs_header' ]);
		const missing = [];
		for (const t of Object.keys(offered))
			for (const name of Object.keys(rows[t] || {}))
				if (!offered[t].has(name) && !expert.has(t + '.' + name)) missing.push(t + '.' + name);
		assert.deepStrictEqual(missing, []);
	});

	// ------------------------------------------- the dialog round trip

	// Another valid value for each option of FULL_UCI's sections (the
	// timeout stays below the interval).
	const SAMPLE = {
		asn: '65002', router_id: '192.0.2.9', local_address: '127.0.0.9', local_address_ipv6: '2001:db8::2', listen_address: '127.0.0.3',
		listen_port: '1179', hold_time: '12s', keepalive_time: '3s', shutdown_drain: '1s', api_listen: '127.0.0.1:59180',
		api_token: '0123456789abcdef0123', ubus_socket: '/tmp/ubus.sock', name: 'renamed', address: '127.0.0.5', peer_asn: '65020',
		port: '1790', multihop_ttl: '8', error_wait_min: '3s', error_wait_max: '90s', send_hold_time: '20m', role: 'customer', extended_next_hop: '1', auth_password: 'secret',
		prefix: '192.0.2.81/32', checks_policy: 'any', local_interface: 'br-wan', service: 'dnsmasq', interface: 'wan', drain_time: '20s', drain_until_flows_below: '3', recovery_hold: '5s',
		as_path_prepend: '2', community: '65001:200', large_community: '65001:2:2', lower_priority_as_path_prepend: '8',
		lower_priority_community: '65001:666', lower_priority_large_community: '65001:6:6', lower_priority_file: '/tmp/x.drain',
		degraded_latency: '50ms', degraded_hold_down: '30s',
		med: '50', local_pref: '200', lower_priority_med: '500', lower_priority_local_pref: '50',
		interval: '3s', fast_interval: '1s', timeout: '700ms', rise: '4', fall: '5', url: '/ready', host: 'web2.lan', method: 'POST', header: 'X-A: 1',
		response_code: '204', response_text: 'ok', response_regex: '^ok', response_jq: '.ok', proxy: 'http://127.0.0.1:3128',
		tls_ca_cert: '/etc/ssl/ca.pem', tls_server_name: 'web2.lan', tls_client_cert: '/etc/ssl/c.pem', tls_client_key: '/etc/ssl/c.key',
		query: 'dns.lan.', resolver: '127.0.0.53', expected_answer: '192.0.2.80', dst_ip: '192.0.2.81', src_ip: '192.0.2.1',
		count: '5', ping_interval: '20ms', max_loss_ratio: '0.25', send: 'HELLO', expect: 'WORLD', payload: 'x', payload_hex: 'ff',
		service: 'api', ok_code: 'NOT_FOUND', metadata: 'k: v', command: '/bin/false', arg: '-q',
		object: 'network.interface.lan', args: '{"verbose": true}', socket: '/tmp/ubus2.sock',
		otel_endpoint: 'http://127.0.0.1:4318', otel_service_name: 'edge', otel_header: 'X-Key: k', otel_metrics_interval: '30s', otel_traces_sample_ratio: '0.5',
		hooks_dir: '/etc/pathosd/hooks', hook_timeout: '5s', hook_queue: '16',
		log_otel_level: 'warn', bfd_desired_minimum_tx_interval: '50ms', bfd_required_minimum_receive: '200ms', bfd_detection_multiplier: '4'
	};
	// Options others depend on: their change also removes what they hide
	// (tested on their own below).
	const CONTROLS = [ 'type', 'enable_multihop', 'require_local_address', 'fail_action', 'bfd' ];

	// Opens the section's editor: the page for main, a dialog for the rest.
	async function editor(env, m, type, sid) {
		if (type === 'pathosd') {
			const s = sectionOf(m, 'pathosd');
			return {
				sid, ns: s,
				w: (name) => opt(s, name).widget(sid),
				save: () => Promise.all(env.form.pageMaps.map((p) => p.save())).then(() => true, () => false)
			};
		}
		return dialog(env, sectionOf(m, type), sid);
	}

	// The one change an edit of option o should stage: set to the new
	// value, or unset when the new value is the default LuCI removes.
	function edit(d, o) {
		const w = o.widget(d.sid);
		const uciName = o.ucioption || o.option;
		const cls = o.constructor.name;
		let value;
		if (cls === 'Flag') {
			value = w.checked ? '0' : '1';
			w.set(value === '1');
			return (value == o.default && o.rmempty) ? [ 'unset', d.sid, uciName ] : [ 'set', d.sid, uciName, value ];
		}
		if (cls === 'ListValue') {
			value = w.choices.filter((c) => c !== '' && c !== w.getValue())[0];
			w.set(value);
			return (value == o.default && o.rmempty) ? [ 'unset', d.sid, uciName ] : [ 'set', d.sid, uciName, value ];
		}
		if (cls === 'DynamicList') {
			assert.ok(SAMPLE[o.option], 'a sample for ' + o.option);
			assert.strictEqual(w.add(SAMPLE[o.option]), null, o.option + ' takes ' + SAMPLE[o.option]);
			return [ 'set', d.sid, uciName, w.getValue() ];
		}
		assert.ok(SAMPLE[o.option], 'a sample for ' + o.option);
		w.set(SAMPLE[o.option]);
		return [ 'set', d.sid, uciName, SAMPLE[o.option] ];
	}

	const ROUND_TRIP = [ [ 'pathosd', 'main' ], [ 'neighbor', 'bird' ], [ 'neighbor', 'up_1' ], [ 'vip', 'web' ], [ 'vip', 'dns_6' ] ]
		.concat(FULL_UCI.filter((s) => s['.type'] === 'check').map((s) => [ 'check', s['.name'], s.type ]));

	test(label + 'config.js: dialog round trip: Save without edits stages nothing, for main, neighbors, VIPs and a check of every type', async () => {
		const problems = [];
		for (const [ type, sid, ctype ] of ROUND_TRIP) {
			const { env, m } = await renderConfig(FULL_UCI);
			const d = await editor(env, m, type, sid);
			const saved = await d.save();
			if (!saved) problems.push(type + ' ' + sid + ': not saved: ' + (d.m ? d.m.errors : env.ui.modal && text(E('div', env.ui.modal.children))));
			if (env.uci.changes.length) problems.push(type + ' ' + sid + (ctype ? ' (' + ctype + ')' : '') + ' staged ' + JSON.stringify(plain(env.uci.changes)));
		}
		assert.deepStrictEqual(problems, []);
		assert.deepStrictEqual(FULL_UCI.filter((s) => s['.type'] === 'check').map((s) => s.type).sort(),
			[ 'dns', 'exec', 'grpc', 'http', 'https', 'ping', 'tcp', 'ubus', 'udp' ], 'every check type');
	});

	test(label + 'config.js: dialog round trip: changing one field stages exactly that option, for every field of every section and check type', async () => {
		const problems = [];
		let edits = 0;
		for (const [ type, sid, ctype ] of ROUND_TRIP) {
			const first = await renderConfig(FULL_UCI);
			const d0 = await editor(first.env, first.m, type, sid);
			const names = d0.ns.children.filter((o) => o.isActive(sid) && CONTROLS.indexOf(o.option) < 0 &&
				!(type === 'check' && o.option === 'vip')).map((o) => o.option);
			for (const name of names) {
				const { env, m } = await renderConfig(FULL_UCI);
				const d = await editor(env, m, type, sid);
				const want = edit(d, d.ns.getOption(name));
				edits++;
				const saved = await d.save();
				const got = plain(env.uci.changes);
				if (!saved || JSON.stringify(got) !== JSON.stringify([ want ]))
					problems.push(type + ' ' + sid + (ctype ? ' (' + ctype + ')' : '') + ' option ' + name + ': want ' +
						JSON.stringify(want) + ', staged ' + JSON.stringify(got) + (saved ? '' : ' (not saved)'));
			}
		}
		assert.deepStrictEqual(problems, []);
		assert.ok(edits > 100, edits + ' one-field edits');
	});

	test(label + 'config.js: an http check keeps its port and method when another field changes (the outage case)', async () => {
		const { env, m } = await renderConfig(FULL_UCI);
		const d = await dialog(env, sectionOf(m, 'check'), 'cfg010001');
		assert.deepStrictEqual([ d.w('port').getValue(), d.w('method').getValue() ], [ '8081', 'HEAD' ]);
		d.set('interval', '5s');
		assert.ok(await d.save());
		assert.deepStrictEqual(plain(env.uci.changes), [ [ 'set', 'cfg010001', 'interval', '5s' ] ]);
		assert.deepStrictEqual([ env.uci.rpcd.store.find((s) => s['.name'] === 'cfg010001').port,
			env.uci.rpcd.store.find((s) => s['.name'] === 'cfg010001').method ], [ '8081', 'HEAD' ]);
	});

	test(label + 'config.js: tcp, udp and grpc checks get their port, and cannot be saved without one', async () => {
		for (const t of [ 'tcp', 'udp', 'grpc' ]) {
			const { env, m } = await renderConfig(BASE_UCI);
			const d = await addCheck(env, m, 'web', t);
			assert.ok(/port/.test(d.error('port')), t + ': a port is required: ' + d.error('port'));
			assert.strictEqual(await d.save(), false, t + ': not saved without a port');
			d.set('port', '8081');
			assert.strictEqual(d.error('port'), null);
			assert.ok(await d.save(), t + ' saved');
			const sec = env.uci.rpcd.store.find((s) => s['.name'] === d.sid);
			assert.strictEqual(sec.port, '8081', t + ' check written with its port: ' + JSON.stringify(sec));
		}
	});

	test(label + 'config.js: a check\'s type change removes the old type\'s options, keeps the ones the new type takes', async () => {
		const { env, m } = await renderConfig(FULL_UCI);
		const d = await dialog(env, sectionOf(m, 'check'), 'cfg010001');
		d.set('type', 'tcp');
		assert.ok(await d.save(), d.m.errors.join());
		assert.deepStrictEqual(staged(env), [
			[ 'set', 'cfg010001', 'type', 'tcp' ],
			[ 'unset', 'cfg010001', 'header' ],
			[ 'unset', 'cfg010001', 'keep_alive' ],
			[ 'unset', 'cfg010001', 'method' ],
			[ 'unset', 'cfg010001', 'response_code' ],
			[ 'unset', 'cfg010001', 'url' ]
		], 'port stays: tcp takes it');
	});

	test(label + 'config.js: a switched-off control removes what it hid; unchanged, what it hides stays', async () => {
		let { env, m } = await renderConfig(FULL_UCI);
		let d = await dialog(env, sectionOf(m, 'neighbor'), 'bird');
		d.set('enable_multihop', false);
		assert.ok(await d.save());
		assert.deepStrictEqual(staged(env), [ [ 'unset', 'bird', 'enable_multihop' ], [ 'unset', 'bird', 'multihop_ttl' ] ]);
		// BFD unticked: its timers go with it.
		({ env, m } = await renderConfig(FULL_UCI));
		d = await dialog(env, sectionOf(m, 'neighbor'), 'bird');
		d.set('bfd', false);
		assert.ok(await d.save());
		assert.deepStrictEqual(staged(env), [ [ 'unset', 'bird', 'bfd' ], [ 'unset', 'bird', 'bfd_desired_minimum_tx_interval' ], [ 'unset', 'bird', 'bfd_detection_multiplier' ] ]);
		// A value hidden in the file (drain_time without drain_then_withdraw)
		// stays when the dialog is saved with other edits.
		({ env, m } = await renderConfig(FULL_UCI.map((s) => (s['.name'] === 'web' ? Object.assign({}, s, { fail_action: 'withdraw' }) : s))));
		d = await dialog(env, sectionOf(m, 'vip'), 'web');
		assert.strictEqual(d.active('drain_time'), false);
		d.set('checks_policy', 'any');
		assert.ok(await d.save());
		assert.deepStrictEqual(staged(env), [ [ 'set', 'web', 'checks_policy', 'any' ] ]);
	});

	// form.js wrote the valid fields of a dialog whose Save was refused into
	// uci.js's changes; dismissed, they went out with the next save.
	test(label + 'config.js: a dialog (and the page\'s form) is all or nothing: refused for one invalid field, nothing of it is written later', async () => {
		const { env, m, v } = await renderConfig(FULL_UCI.map((x) => (x['.name'] === 'web' ? Object.assign({}, x, { fail_action: 'withdraw' }) : x)));
		let d = await dialog(env, sectionOf(m, 'vip'), 'web');
		d.set('fail_action', 'lower_priority').set('checks_policy', 'any').set('prefix', 'nope');
		assert.strictEqual(await d.save(), false, 'refused: the prefix');
		await d.cancel();
		d = await dialog(env, sectionOf(m, 'neighbor'), 'bird');
		d.set('port', '1790');
		assert.ok(await d.save());
		assert.deepStrictEqual(plain(env.uci.changes), [ [ 'set', 'bird', 'port', '1790' ] ], 'the VIP stays withdraw');
		// The page's own form: a valid log level beside an invalid AS.
		opt(sectionOf(m, 'pathosd'), 'log_level').widget('main').set('debug');
		opt(sectionOf(m, 'pathosd'), 'asn').widget('main').set('sixty');
		await v.handleSave();
		d = await dialog(env, sectionOf(m, 'neighbor'), 'up_1');
		d.set('port', '1791');
		assert.ok(await d.save());
		assert.deepStrictEqual(plain(env.uci.changes).slice(1), [ [ 'set', 'up_1', 'port', '1791' ] ], 'no log level');
		// Corrected, the dialog saves all of it.
		d = await dialog(env, sectionOf(m, 'vip'), 'web');
		d.set('checks_policy', 'any').set('prefix', 'nope');
		assert.strictEqual(await d.save(), false);
		d.set('prefix', '192.0.2.82/32');
		assert.ok(await d.save());
		assert.deepStrictEqual(staged(env).filter((c) => c[1] === 'web'),
			[ [ 'set', 'web', 'checks_policy', 'any' ], [ 'set', 'web', 'prefix', [ '192.0.2.82/32' ] ] ]);
	});

	// form.js's handleModalSave reloads and redraws the page's form: what was
	// typed there and not saved was gone (the API left without a token).
	test(label + 'config.js: what is typed in General settings and not saved survives a dialog\'s Save (the Enabled tick, an API token), unsaved', async () => {
		const r = await renderConfig(BASE_UCI.map((x) => (x['.name'] === 'main' ? Object.assign({}, x, { enabled: '0' }) : x)));
		const main = sectionOf(r.m, 'pathosd');
		const typed = () => [ 'enabled', 'api_token', 'otel_header', 'log_level', 'hold_time' ].map((n) => plain(opt(main, n).formvalue('main')));
		opt(main, 'enabled').widget('main').set(true);
		opt(main, 'api_token').widget('main').set('0123456789abcdef0123');
		assert.strictEqual(opt(main, 'otel_header').widget('main').add('X-Key: k'), null);
		opt(main, 'log_level').widget('main').set('debug');
		opt(main, 'hold_time').widget('main').set('soon');
		const want = [ '1', '0123456789abcdef0123', [ 'X-Key: k' ], 'debug', 'soon' ];
		assert.deepStrictEqual(typed(), want);
		let d = await dialog(r.env, sectionOf(r.m, 'vip'), 'web');
		d.set('checks_policy', 'any');
		assert.ok(await d.save());
		assert.deepStrictEqual(typed(), want, 'still typed after the dialog\'s save');
		assert.ok(/duration/.test(opt(main, 'hold_time').validationError('main')), 'and still flagged');
		assert.deepStrictEqual(plain(r.env.uci.changes), [ [ 'set', 'web', 'checks_policy', 'any' ] ], 'not saved by it');
		// Added and deleted rows redraw the page too.
		d = await addDialog(r.env, sectionOf(r.m, 'vip'), 'web2');
		d.set('prefix', '192.0.2.81/32').set('always', true);
		assert.ok(await d.save());
		assert.deepStrictEqual(typed(), want);
		opt(main, 'hold_time').widget('main').set('9s');
		await r.v.handleSave();
		assert.deepStrictEqual(staged(r.env).filter((c) => c[1] === 'main'), [
			[ 'set', 'main', 'api_token', '0123456789abcdef0123' ], [ 'set', 'main', 'enabled', '1' ],
			[ 'set', 'main', 'hold_time', '9s' ], [ 'set', 'main', 'log_level', 'debug' ], [ 'set', 'main', 'otel_header', [ 'X-Key: k' ] ]
		]);
	});

	test(label + 'config.js: Save with no edits stages nothing (main\'s enabled is not rewritten)', async () => {
		const { env, v } = await renderConfig(BASE_UCI);
		await v.handleSave();
		assert.deepStrictEqual(plain(env.uci.changes), []);
		await v.handleSaveApply(null, '0');
		assert.deepStrictEqual(plain(env.uci.changes), []);
		assert.deepStrictEqual(env.ui.applied, [ true ]);
	});

	test(label + 'config.js: booleans the daemon takes as words (yes, true, on) show ticked and stay as written', async () => {
		const { env, m } = await renderConfig(FULL_UCI);
		let d = await dialog(env, sectionOf(m, 'vip'), 'web');
		assert.strictEqual(d.w('require_local_address').checked, true, 'true is ticked');
		assert.ok(await d.save());
		d = await dialog(env, sectionOf(m, 'neighbor'), 'up_1');
		assert.strictEqual(d.w('passive').checked, true, 'on is ticked');
		assert.ok(await d.save());
		d = await dialog(env, sectionOf(m, 'neighbor'), 'bird');
		assert.strictEqual(d.w('graceful_restart').getValue(), '1', 'yes is "on"');
		assert.ok(await d.save());
		assert.deepStrictEqual(plain(env.uci.changes), []);
	});

	test(label + 'config.js: a neighbor is required unless unticked, which writes required \'0\'', async () => {
		const { env, m } = await renderConfig(BASE_UCI);
		const nb = sectionOf(m, 'neighbor');
		assert.strictEqual(gridRow(nb, 'bird').cells.required, 'Yes', 'no option: the daemon\'s required: true');
		let d = await dialog(env, nb, 'bird');
		assert.strictEqual(d.w('required').checked, true, 'the box is ticked');
		d.set('required', false);
		assert.ok(await d.save(), 'saved');
		assert.deepStrictEqual(plain(env.uci.changes), [ [ 'set', 'bird', 'required', '0' ] ]);
		assert.strictEqual(gridRow(nb, 'bird').cells.required, 'No');
		d = await dialog(env, nb, 'bird');
		d.set('required', true);
		assert.ok(await d.save());
		assert.deepStrictEqual(plain(env.uci.changes).slice(1), [ [ 'unset', 'bird', 'required' ] ], 'back to the default');
	});

	test(label + 'config.js: the grids show the daemon\'s value of an unset option, and labels not raw keys', async () => {
		const { m } = await renderConfig(BASE_UCI);
		const nb = gridRow(sectionOf(m, 'neighbor'), 'bird').cells;
		assert.strictEqual(nb.port, '179');
		const vip = gridRow(sectionOf(m, 'vip'), 'web').cells;
		assert.strictEqual(vip.checks_policy, 'all');
		assert.strictEqual(vip.fail_action, 'lower priority (prepend, communities)');
		const ck = gridRow(sectionOf(m, 'check'), 'cfg0a5f56').cells;
		assert.deepStrictEqual([ ck.interval, ck.timeout, ck.rise, ck.fall ], [ '1s', '100ms', '1', '3' ]);
		[ nb, vip, ck ].forEach((cells) => Object.keys(cells).forEach((k) =>
			assert.notStrictEqual(cells[k], 'none', k + ' shows none')));
	});

	// ------------------------------------------- the check's VIP

	test(label + 'config.js: the check dialog offers a VIP added on the same page, and saves it', async () => {
		const { env, m } = await renderConfig(BASE_UCI);
		const vips = sectionOf(m, 'vip');
		// Add VIP lonely...
		let d = await addDialog(env, vips, 'lonely');
		d.set('prefix', '192.0.2.99/32');
		assert.ok(await d.save(), 'VIP saved');
		// ...then a check for it.
		d = await addCheck(env, m, 'lonely', 'tcp');
		assert.deepStrictEqual(plain(d.w('vip').choices), [ 'web', 'lonely' ]);
		assert.strictEqual(d.w('vip').getValue(), 'lonely');
		d.set('port', '80');
		assert.ok(await d.save(), 'check saved: ' + d.m.errors);
		assert.deepStrictEqual(plain(env.uci.changes.filter((c) => c[0] === 'add')), [ [ 'add', 'vip', 'lonely' ], [ 'add', 'check', 'lonely_tcp' ] ]);
		assert.deepStrictEqual(plain(env.uci.changes.filter((c) => c[1] === 'lonely_tcp' && c[0] === 'set')),
			[ [ 'set', 'lonely_tcp', 'vip', 'lonely' ], [ 'set', 'lonely_tcp', 'type', 'tcp' ], [ 'set', 'lonely_tcp', 'port', '80' ] ]);
	});

	test(label + 'config.js: a check\'s VIP is named by option name when set, or by section name', async () => {
		const { env, m } = await renderConfig(BASE_UCI.concat([
			{ '.type': 'vip', '.name': 'web_2', name: 'web-2', prefix: '192.0.2.2/32', always: '1' },
			{ '.type': 'check', '.name': 'by_section', vip: 'web_2', type: 'ping' }
		]));
		const d = await dialog(env, sectionOf(m, 'check'), 'by_section');
		assert.deepStrictEqual(plain(d.w('vip').choices), [ 'web', 'web-2', 'web_2' ]);
		assert.strictEqual(d.w('vip').getValue(), 'web_2');
		assert.strictEqual(d.error('vip'), null, 'the section name is a valid VIP name');
		assert.ok(await d.save());
		assert.deepStrictEqual(plain(env.uci.changes), []);
	});

	test(label + 'config.js: a check whose VIP is gone shows that name, flags it, and Save never writes another VIP', async () => {
		const { env, m } = await renderConfig(BASE_UCI.concat([
			{ '.type': 'vip', '.name': 'dns', prefix: '192.0.2.53/32', always: '1' },
			{ '.type': 'check', '.name': 'old_ping', vip: 'gone', type: 'ping', interval: '2s' }
		]));
		const d = await dialog(env, sectionOf(m, 'check'), 'old_ping');
		assert.strictEqual(d.w('vip').getValue(), 'gone', 'the file\'s value, not the first VIP');
		assert.ok(/No VIP is named gone/.test(d.error('vip')), String(d.error('vip')));
		d.set('interval', '3s');
		assert.strictEqual(await d.save(), false, 'not saved while its VIP does not exist');
		assert.deepStrictEqual(plain(env.uci.changes), []);
		// Disabled, it may keep the name (the daemon skips it).
		d.set('enabled', false);
		assert.ok(await d.save(), d.m.errors.join());
		assert.deepStrictEqual(staged(env), [ [ 'set', 'old_ping', 'enabled', '0' ], [ 'set', 'old_ping', 'interval', '3s' ] ]);
		assert.ok(env.uci.changes.every((c) => c[2] !== 'vip'), 'vip never written');
	});

	// ------------------------------------------- adding sections

	test(label + 'config.js: Add with the name of an existing section is refused with a message', async () => {
		for (const [ type, name ] of [ [ 'vip', 'web' ], [ 'neighbor', 'bird' ], [ 'vip', 'bird' ], [ 'neighbor', 'main' ] ]) {
			const { env, m } = await renderConfig(BASE_UCI);
			await sectionOf(m, type).handleAdd(null, name);
			assert.ok(env.ui.modal && !env.ui.modal.map, type + ' ' + name + ': a message, not an editor');
			assert.ok(/exists already|has a .* section named/.test(text(E('div', env.ui.modal.children))), text(E('div', env.ui.modal.children)));
			assert.ok(new RegExp(name).test(text(E('div', env.ui.modal.children))));
			await Promise.resolve(findAll(E('div', env.ui.modal.children), (n) => n.tag === 'button' && text(n) === 'Dismiss')[0].attrs.click());
			assert.strictEqual(env.ui.modal, null);
			await env.form.pageMaps[0].save(null, true);
			assert.deepStrictEqual(plain(env.uci.changes), [], 'nothing staged');
			assert.strictEqual(env.uci.rpcd.store.find((s) => s['.name'] === 'web').prefix, '192.0.2.80/32');
		}
	});

	test(label + 'config.js: new checks are named sections (VIP_type), so dialogs and the daemon name what the page shows', async () => {
		const { env, m } = await renderConfig(BASE_UCI.concat([ { '.type': 'vip', '.name': 'ns_1', name: '1-ns', prefix: '192.0.2.1/32', always: '1' } ]));
		let d = await addCheck(env, m, 'web', 'http');
		assert.strictEqual(d.sid, 'web_http');
		assert.strictEqual(d.title, 'pathosd - web_http');
		assert.ok(await d.save(), d.m.errors.join());
		d = await addCheck(env, m, 'web', 'http');
		assert.strictEqual(d.sid, 'web_http_2', 'unique');
		await d.cancel();
		d = await addCheck(env, m, '1-ns', 'dns');
		assert.strictEqual(d.sid, '_1_ns_dns', 'a UCI name and a checks_policy identifier');
		await d.cancel();
		assert.deepStrictEqual(env.uci.rpcd.store.filter((s) => s['.type'] === 'check').map((s) => [ s['.name'], s['.anonymous'] ]),
			[ [ 'cfg0a5f56', true ], [ 'web_http', false ] ], 'cancelled ones leave nothing');
		assert.deepStrictEqual(sectionOf(m, 'check').rows().map((r) => r.title), [ 'dns', 'web_http' ]);
	});

	test(label + 'config.js: with no VIP, the check add row says to add one first', async () => {
		const { m } = await renderConfig(BASE_UCI.filter((s) => s['.type'] !== 'vip' && s['.type'] !== 'check'));
		const row = sectionOf(m, 'check').renderSectionAdd();
		assert.ok(/Add a VIP first/.test(text(row)), text(row));
		assert.strictEqual(findAll(row, (n) => n.tag === 'button').length, 0);
	});

	// ------------------------------------------- deleting a VIP

	test(label + 'config.js: deleting a VIP with checks says so and offers to delete them with it', async () => {
		const sections = BASE_UCI.concat([ { '.type': 'check', '.name': 'web_tcp', vip: 'web', type: 'tcp', port: '80' } ]);
		let { env, m } = await renderConfig(sections);
		await sectionOf(m, 'vip').handleRemove('web');
		const body = text(E('div', env.ui.modal.children));
		assert.ok(/VIP web has 2 checks: dns, web_tcp/.test(body), body);
		assert.deepStrictEqual(plain(env.uci.changes), [], 'nothing deleted before the user chooses');
		await button(E('div', env.ui.modal.children), 'pathosd-delete-all').attrs.click({});
		assert.strictEqual(env.ui.modal, null);
		assert.deepStrictEqual(staged(env), [ [ 'remove', 'cfg0a5f56' ], [ 'remove', 'web' ], [ 'remove', 'web_tcp' ] ]);

		({ env, m } = await renderConfig(sections));
		await sectionOf(m, 'vip').handleRemove('web');
		await button(E('div', env.ui.modal.children), 'pathosd-delete-vip').attrs.click({});
		assert.deepStrictEqual(staged(env), [ [ 'remove', 'web' ] ]);

		// A VIP without checks goes at once.
		({ env, m } = await renderConfig(sections.concat([ { '.type': 'vip', '.name': 'dns', prefix: '192.0.2.53/32', always: '1' } ])));
		await sectionOf(m, 'vip').handleRemove('dns');
		assert.strictEqual(env.ui.modal, null);
		assert.deepStrictEqual(staged(env), [ [ 'remove', 'dns' ] ]);
	});

	// ------------------------------------------- validation in fields

	test(label + 'config.js: the dialog refuses what the daemon would (timeout >= interval, 16-bit communities, names)', async () => {
		const { env, m } = await renderConfig(BASE_UCI);
		let d = await dialog(env, sectionOf(m, 'check'), 'cfg0a5f56');
		d.set('interval', '1s').set('timeout', '1s');
		assert.ok(/less than the interval/.test(d.error('timeout')), d.error('timeout'));
		assert.ok(/less than the interval/.test(d.error('interval')));
		assert.strictEqual(await d.save(), false, 'not saved');
		assert.deepStrictEqual(plain(env.uci.changes), []);
		d.set('timeout', '');
		d.set('interval', '50ms');
		assert.ok(/less than the interval/.test(d.error('interval')), 'against the default timeout 100ms');
		assert.ok(/less than the interval/.test(d.error('timeout')), 'the default timeout 100ms against 50ms');
		d.set('interval', '2s').set('timeout', '1500ms');
		assert.strictEqual(d.error('timeout'), null);
		d.set('fast_interval', '3s');
		assert.ok(/not be more than the interval/.test(d.error('fast_interval')), d.error('fast_interval'));
		d.set('fast_interval', '1500ms');
		assert.ok(/more than the timeout/.test(d.error('fast_interval')), d.error('fast_interval'));
		d.set('fast_interval', '2s');
		assert.strictEqual(d.error('fast_interval'), null);
		d.set('fast_interval', '');
		assert.strictEqual(d.error('fast_interval'), null);
		d.set('name', 'a-b');
		assert.ok(d.error('name'), 'check name a-b');
		d.set('name', 'all');
		assert.ok(/Reserved/.test(d.error('name')));
		d.set('name', 'dns_main');
		assert.strictEqual(d.error('name'), null);
		assert.ok(await d.save());
		assert.deepStrictEqual(plain(env.uci.changes), [ [ 'set', 'cfg0a5f56', 'name', 'dns_main' ], [ 'set', 'cfg0a5f56', 'interval', '2s' ], [ 'set', 'cfg0a5f56', 'timeout', '1500ms' ] ]);

		d = await dialog(env, sectionOf(m, 'vip'), 'web');
		assert.strictEqual(d.add('community', '65535:65535'), null);
		assert.ok(d.add('community', '65536:1'), '65536:1 is refused as it is typed');
		assert.ok(d.add('community', '1:65536'), '1:65536');
		assert.strictEqual(d.add('large_community', '4294967295:1:2'), null);
		assert.ok(d.add('large_community', '4294967296:1:2'));
		d.set('name', 'web-1.lan');
		assert.strictEqual(d.error('name'), null, 'VIP names take - and .');
		d.set('name', 'web 1');
		assert.ok(d.error('name'));
		d.set('name', 'web');
		// A pessimized route never preferred to the healthy one.
		d.set('med', '100').set('lower_priority_med', '99');
		assert.ok(/Below the MED 100/.test(d.error('lower_priority_med')), d.error('lower_priority_med'));
		d.set('lower_priority_med', '100');
		assert.strictEqual(d.error('lower_priority_med'), null);
		d.set('lower_priority_local_pref', '101');
		assert.ok(/Above the LOCAL_PREF 100/.test(d.error('lower_priority_local_pref')), 'against the default 100');
		d.set('local_pref', '150');
		assert.strictEqual(d.error('lower_priority_local_pref'), null);
		// Graded health: a latency a passing probe can exceed.
		d = await dialog(env, sectionOf(m, 'check'), 'cfg0a5f56');
		d.set('degraded_latency', '1500ms');
		assert.ok(/less than the timeout/.test(d.error('degraded_latency')), d.error('degraded_latency'));
		d.set('degraded_latency', '0');
		assert.ok(/greater than 0/.test(d.error('degraded_latency')), 'zero');
		d.set('degraded_latency', '1s');
		assert.strictEqual(d.error('degraded_latency'), null, 'below the timeout 1500ms');
	});

	test(label + 'config.js: invalid list items from the file are flagged in the dialog and not saved', async () => {
		const { env, m } = await renderConfig(BASE_UCI.map((s) => (s['.name'] === 'web'
			? Object.assign({}, s, { community: [ '65001:1', '65536:1' ], large_community: [ '1:2:3' ] }) : s)));
		const d = await dialog(env, sectionOf(m, 'vip'), 'web');
		const flagged = byClass(d.node, 'pathosd-bad-items');
		assert.strictEqual(flagged.length, 1, 'one list flagged: ' + text(d.node));
		assert.ok(/65536:1/.test(text(flagged[0])) && !/65001:1,/.test(text(flagged[0])), text(flagged[0]));
		assert.ok(/65536:1/.test(d.error('community')), String(d.error('community')));
		assert.strictEqual(d.error('large_community'), null);
		d.set('checks_policy', 'any');
		assert.strictEqual(await d.save(), false, 'not saved with 65536:1');
		d.w('community').remove('65536:1');
		assert.ok(await d.save());
		assert.deepStrictEqual(staged(env), [ [ 'set', 'web', 'checks_policy', 'any' ], [ 'set', 'web', 'community', [ '65001:1' ] ] ]);
	});

	test(label + 'config.js: a prefix with host bits is refused, naming both readings', async () => {
		const { env, m } = await renderConfig(BASE_UCI);
		const d = await dialog(env, sectionOf(m, 'vip'), 'web');
		const err = (p) => { d.set('prefix', p); return d.error('prefix'); };
		assert.strictEqual(err('10.10.1.0/24'), null);
		assert.strictEqual(err('10.10.1.5/32'), null);
		const e = err('10.10.1.5/24');
		assert.ok(/10\.10\.1\.5\/24 has host bits set/.test(e) && /10\.10\.1\.5\/32/.test(e) && /10\.10\.1\.0\/24/.test(e), e);
		assert.ok(/2001:db8::5\/128.*2001:db8::\/64/.test(err('2001:db8::5/64')), err('2001:db8::5/64'));
		assert.ok(/2001:db8:0:1::\/64/.test(err('2001:db8:0:1:ffff::1/64')), err('2001:db8:0:1:ffff::1/64'));
		assert.strictEqual(err('2001:db8::/64'), null);
		assert.strictEqual(err('2001:db8::53/128'), null);
		assert.ok(err('10.10.1.5/33'));
		assert.ok(err('web'));
		assert.strictEqual(err('%{VIP_PREFIX}'), null, 'placeholders are the daemon\'s');
		d.set('prefix', '10.10.1.5/24');
		assert.strictEqual(await d.save(), false, 'not saved');
		assert.deepStrictEqual(plain(env.uci.changes), []);
	});

	// The form took 010.10.1.1/32, which the daemon refuses (Rust's address
	// parser: no leading zeros), and refused a bare address it takes. Each
	// prefix here goes through the form and through the real pathosd.
	test(label + 'config.js: a VIP prefix passes the form exactly when it passes pathosd', async () => {
		const { env, m } = await renderConfig(BASE_UCI);
		const d = await dialog(env, sectionOf(m, 'vip'), 'web');
		// Each address once: pathosd refuses two VIPs with one prefix.
		const PREFIXES = [ '010.10.1.1/32', '10.10.1.1/32', '10.10.1.2', '10.010.1.3/32', '0.0.0.0/32', '192.0.2.0/24', '198.51.100.0/024',
			'203.0.113.0/+24', '192.0.2.1/256', '192.0.2.2/33', '192.0.2.3/', '192.0.2.256/32', '1.2.3/32', '1.2.3.4.5/32', ' 1.2.3.4/32',
			'2001:db8::1/128', '2001:db8::2', '2001:DB8::3/128', '2001:db8:0:0:0:0:0:4/128', '2001:db8::00005/128', '2001:db8:1::/48',
			'::ffff:192.0.2.1/128', '::ffff:192.0.2.02/128', '2001:db8::1::2/128', '2001:db8::6/129', 'fe80::1%eth0/128', 'web', '' ];
		const uciText = [ "\nconfig pathosd 'main'\n\toption asn '65001'\n\toption router_id '192.0.2.1'\n\toption local_address_ipv6 '2001:db8::2'",
			"config neighbor 'n'\n\toption address '127.0.0.1'\n\toption peer_asn '65000'" ]
			.concat(PREFIXES.map((p, i) => "config vip 'v" + i + "'\n\toption prefix '" + p + "'\n\toption always '1'")).join('\n\n') + '\n';
		const r = spawnSync(process.env.PATHOSD_BIN || path.join(ROOT, 'target/debug/pathosd'), [ 'validate', '--json', '--format', 'uci', '--config', '-' ],
			{ input: uciText, encoding: 'utf8' });
		const daemonBad = new Set(JSON.parse(r.stdout).errors.filter((e) => e.option === 'prefix').map((e) => +e.section.replace(/\D/g, '')));
		const disagree = [];
		PREFIXES.forEach((p, i) => {
			d.set('prefix', p);
			const formOk = d.error('prefix') == null;
			if (p !== '' && formOk === daemonBad.has(i)) disagree.push(p + ': form ' + (formOk ? 'takes' : 'refuses') + ' it, pathosd ' + (daemonBad.has(i) ? 'refuses' : 'takes') + ' it');
		});
		assert.deepStrictEqual(disagree, []);
		assert.ok(daemonBad.size > 10 && daemonBad.size < PREFIXES.length - 5, daemonBad.size + ' refused by pathosd');
	});

	// RFC 9234 strict mode (validate/bgp.rs roles): require_role needs a role.
	test(label + 'config.js: Require peer role without a BGP role is refused on the role, naming it; with a role it saves', async () => {
		const { env, m } = await renderConfig(BASE_UCI);
		const s = sectionOf(m, 'neighbor');
		const d = await dialog(env, s, 'bird');
		d.set('require_role', true);
		assert.ok(/Require peer role/.test(String(d.error('role'))), String(d.error('role')));
		assert.strictEqual(await d.save(), false, 'not saved');
		assert.ok(d.m.errors.some((e) => e.indexOf(opt(s, 'role').title) >= 0), d.m.errors.join(' | '));
		assert.deepStrictEqual(plain(env.uci.changes), [], 'nothing written');
		d.set('role', 'peer');
		assert.strictEqual(d.error('role'), null);
		assert.ok(await d.save(), d.m.errors.join());
		assert.deepStrictEqual(staged(env), [ [ 'set', 'bird', 'require_role', '1' ], [ 'set', 'bird', 'role', 'peer' ] ]);
	});

	// A VIP's damping (validate/vip.rs damping): half-life 1s to 45m,
	// max suppress at most 12h, reuse at least 1 and below suppress (the
	// daemon's defaults 2000 and 750 when empty).
	test(label + 'config.js: damping values pathosd refuses are refused in their fields', async () => {
		const { env, m } = await renderConfig(BASE_UCI);
		const s = sectionOf(m, 'vip');
		const d = await dialog(env, s, 'web');
		d.set('damping', true);
		const bad = [ [ 'damping_half_life', '500ms', /1s to 45m/ ], [ 'damping_half_life', '46m', /1s to 45m/ ],
			[ 'damping_max_suppress', '13h', /at most 12h/ ], [ 'damping_reuse', '2000', /less than the suppress limit 2000/ ],
			[ 'damping_reuse', '0', /at least 1/ ] ];
		for (const [ name, v, re ] of bad) {
			d.set(name, v);
			assert.ok(re.test(String(d.error(name))), name + ' ' + v + ': ' + d.error(name));
			assert.strictEqual(await d.save(), false, name + ' ' + v + ': not saved');
			assert.deepStrictEqual(plain(env.uci.changes), [], 'nothing written');
			d.set(name, '');
		}
		d.set('damping_suppress', '500');
		assert.ok(/less than the suppress limit 500/.test(String(d.error('damping_reuse'))), 'the default reuse 750 against suppress 500: ' + d.error('damping_reuse'));
		d.set('damping_reuse', '400').set('damping_half_life', '45m').set('damping_max_suppress', '12h');
		[ 'damping_half_life', 'damping_suppress', 'damping_reuse', 'damping_max_suppress' ].forEach((n) => assert.strictEqual(d.error(n), null, n));
		assert.ok(await d.save(), d.m.errors.join());
	});

	// RFC 9687's SendHoldTime (validate/bgp.rs): 0 (off) or more than the
	// neighbor's hold time, which is its own hold_time, else main's, else 90s.
	test(label + 'config.js: a neighbor\'s send hold time not more than its hold time is refused, naming the field', async () => {
		const main = Object.assign({}, BASE_UCI[0], { hold_time: '9s' });
		const { env, m } = await renderConfig([ main ].concat(BASE_UCI.slice(1)));
		const s = sectionOf(m, 'neighbor');
		const d = await dialog(env, s, 'bird');
		for (const v of [ '5s', '9s' ]) {
			d.set('send_hold_time', v);
			assert.ok(/more than the hold time 9s/.test(String(d.error('send_hold_time'))), v + ': ' + d.error('send_hold_time'));
			assert.strictEqual(await d.save(), false, v + ': not saved');
			assert.ok(d.m.errors.some((e) => e.indexOf(opt(s, 'send_hold_time').title) >= 0), d.m.errors.join(' | '));
			assert.deepStrictEqual(plain(env.uci.changes), [], 'nothing written');
		}
		for (const v of [ '0', '10s', '' ]) {
			d.set('send_hold_time', v);
			assert.strictEqual(d.error('send_hold_time'), null, v);
		}
		d.set('hold_time', '30s').set('send_hold_time', '20s');
		assert.ok(/more than the hold time 30s/.test(String(d.error('send_hold_time'))), 'the neighbor\'s own hold time: ' + d.error('send_hold_time'));
		d.set('hold_time', '').set('send_hold_time', '20s');
		assert.strictEqual(d.error('send_hold_time'), null, '20s against main\'s 9s');
		assert.ok(await d.save(), d.m.errors.join());
		assert.deepStrictEqual(staged(env), [ [ 'set', 'bird', 'send_hold_time', '20s' ] ]);
		const r2 = await renderConfig(BASE_UCI);
		const d2 = await dialog(r2.env, sectionOf(r2.m, 'neighbor'), 'bird');
		d2.set('send_hold_time', '1m');
		assert.ok(/more than the hold time 90s/.test(String(d2.error('send_hold_time'))), 'the default hold time 90s: ' + d2.error('send_hold_time'));
	});

	// A neighbor's BFD (uci_map.rs bfd_*): its own tab, the timers shown
	// once BFD is ticked, checked as pathosd checks them.
	test(label + 'config.js: BFD tab of a neighbor: ticking BFD shows its timers, Save writes them; a bad interval is refused, naming the field', async () => {
		const { env, m } = await renderConfig(BASE_UCI);
		const s = sectionOf(m, 'neighbor');
		const timers = [ 'bfd_desired_minimum_tx_interval', 'bfd_required_minimum_receive', 'bfd_detection_multiplier', 'bfd_multihop' ];
		[ 'bfd' ].concat(timers).forEach((n) => assert.strictEqual(opt(s, n).tab, 'bfd', n + ' in the BFD tab'));
		assert.deepStrictEqual(plain(opt(s, 'bfd_multihop').keylist), [ '', '1', '0' ]);
		const d = await dialog(env, s, 'bird');
		assert.deepStrictEqual(timers.map((n) => d.active(n)), [ false, false, false, false ], 'hidden while BFD is off');
		d.set('bfd', true);
		assert.deepStrictEqual(timers.map((n) => d.active(n)), [ true, true, true, true ], 'shown once ticked');
		const bad = [ [ 'bfd_desired_minimum_tx_interval', '5ms', /10ms to 60s/ ], [ 'bfd_required_minimum_receive', '2m', /10ms to 60s/ ],
			[ 'bfd_desired_minimum_tx_interval', '0', /10ms to 60s/ ], [ 'bfd_required_minimum_receive', '100', /duration/ ],
			[ 'bfd_detection_multiplier', '1', /./ ], [ 'bfd_detection_multiplier', '256', /./ ] ];
		for (const [ name, v, re ] of bad) {
			d.set(name, v);
			assert.ok(re.test(String(d.error(name))), name + ' ' + v + ': ' + d.error(name));
			assert.strictEqual(await d.save(), false, name + ' ' + v + ': not saved');
			assert.ok(d.m.errors.some((e) => e.indexOf(opt(s, name).title) >= 0), name + ': the refusal names the field: ' + d.m.errors.join(' | '));
			assert.deepStrictEqual(plain(env.uci.changes), [], 'nothing written');
			d.set(name, '');
		}
		d.set('bfd_desired_minimum_tx_interval', '100ms').set('bfd_required_minimum_receive', '0.5s')
			.set('bfd_detection_multiplier', '4').set('bfd_multihop', '0');
		[ 'bfd_desired_minimum_tx_interval', 'bfd_required_minimum_receive', 'bfd_detection_multiplier' ]
			.forEach((n) => assert.strictEqual(d.error(n), null, n));
		assert.ok(await d.save(), d.m.errors.join());
		assert.deepStrictEqual(staged(env), [
			[ 'set', 'bird', 'bfd', '1' ],
			[ 'set', 'bird', 'bfd_desired_minimum_tx_interval', '100ms' ],
			[ 'set', 'bird', 'bfd_detection_multiplier', '4' ],
			[ 'set', 'bird', 'bfd_multihop', '0' ],
			[ 'set', 'bird', 'bfd_required_minimum_receive', '0.5s' ]
		]);
		// Written as the daemon reads it: 'on' and 'no' show as ticked and single hop.
		const r2 = await renderConfig(BASE_UCI.map((x) => (x['.name'] === 'bird' ? Object.assign({}, x, { bfd: 'on', bfd_multihop: 'no' }) : x)));
		const d2 = await dialog(r2.env, sectionOf(r2.m, 'neighbor'), 'bird');
		assert.strictEqual(d2.w('bfd').checked, true);
		assert.strictEqual(d2.w('bfd_multihop').getValue(), '0');
		assert.ok(await d2.save());
		assert.deepStrictEqual(plain(r2.env.uci.changes), [], 'kept as written');
	});

	// Each interval goes through the form and through the real pathosd.
	test(label + 'config.js: a BFD interval passes the form exactly when it passes pathosd', async () => {
		const { env, m } = await renderConfig(BASE_UCI);
		const d = await dialog(env, sectionOf(m, 'neighbor'), 'bird');
		d.set('bfd', true);
		const VALUES = [ '0', '9ms', '9999us', '9999999ns', '10ms', '10000us', '0.01s', '10.5ms', '300ms', '1s', '59.999s', '60s', '1m',
			'60.001s', '1m1s', '2m', '1h', '100', 'ms', '5 ms', '1.5.5s', '-10ms', '%{BFD_TX}' ];
		const uciText = [ "\nconfig pathosd 'main'\n\toption asn '65001'\n\toption router_id '192.0.2.1'\n\toption local_address '127.0.0.2'",
			"config vip 'web'\n\toption prefix '192.0.2.80/32'\n\toption always '1'" ]
			.concat(VALUES.filter((v) => v.indexOf('%') < 0).map((v, i) => "config neighbor 'n" + i + "'\n\toption address '127.0.1." + (i + 1) +
				"'\n\toption peer_asn '65000'\n\toption bfd '1'\n\toption bfd_desired_minimum_tx_interval '" + v + "'")).join('\n\n') + '\n';
		const r = spawnSync(process.env.PATHOSD_BIN || path.join(ROOT, 'target/debug/pathosd'), [ 'validate', '--json', '--format', 'uci', '--config', '-' ],
			{ input: uciText, encoding: 'utf8' });
		assert.ok(r.stdout, 'pathosd validate answered: ' + r.stderr);
		const errs = JSON.parse(r.stdout).errors;
		assert.ok(errs.every((e) => e.option === 'bfd_desired_minimum_tx_interval'), JSON.stringify(errs.filter((e) => e.option !== 'bfd_desired_minimum_tx_interval')));
		const daemonBad = new Set(errs.map((e) => +e.section.replace(/\D/g, '')));
		const disagree = [];
		VALUES.forEach((v, i) => {
			d.set('bfd_desired_minimum_tx_interval', v);
			const formOk = d.error('bfd_desired_minimum_tx_interval') == null;
			if (v.indexOf('%') >= 0) {
				if (!formOk) disagree.push(v + ': a placeholder is the daemon\'s to expand');
			}
			else if (formOk === daemonBad.has(i))
				disagree.push(v + ': form ' + (formOk ? 'takes' : 'refuses') + ' it, pathosd ' + (daemonBad.has(i) ? 'refuses' : 'takes') + ' it');
		});
		assert.deepStrictEqual(disagree, []);
		assert.ok(daemonBad.size > 8 && daemonBad.size < VALUES.length - 5, daemonBad.size + ' refused by pathosd');
	});

	// A default route as a VIP draws all traffic to the router: refused
	// unless the VIP's allow_default_route is ticked.
	test(label + 'config.js: a default route (0.0.0.0/0, ::/0) is refused unless "Allow a default route" is ticked', async () => {
		const { env, m } = await renderConfig(BASE_UCI);
		const vips = sectionOf(m, 'vip');
		const o = opt(vips, 'allow_default_route');
		assert.strictEqual(o.constructor.name, 'Flag');
		assert.strictEqual(o.default, '0');
		const d = await dialog(env, vips, 'web');
		for (const p of [ '0.0.0.0/0', '::/0' ]) {
			d.set('allow_default_route', false).set('prefix', p);
			assert.ok(/is a default route.*Allow a default route/.test(d.error('prefix')), String(d.error('prefix')));
			d.set('allow_default_route', true);
			assert.strictEqual(d.error('prefix'), null, p + ' allowed');
		}
		d.set('allow_default_route', false);
		assert.strictEqual(await d.save(), false, 'not saved unticked');
		d.set('allow_default_route', true);
		assert.ok(await d.save());
		assert.deepStrictEqual(staged(env), [ [ 'set', 'web', 'allow_default_route', '1' ], [ 'set', 'web', 'prefix', [ '::/0' ] ] ]);
		// A /0 with host bits is still refused for its host bits.
		const d2 = await dialog(env, vips, 'web');
		d2.set('prefix', '10.0.0.0/0');
		assert.ok(/host bits/.test(d2.error('prefix')), d2.error('prefix'));
	});

	// A VIP's prefixes are one list (`list prefix`): an IPv4 and an IPv6
	// prefix saved together; an item is validated as the one prefix was; a
	// file's `option prefix` is a list of one.
	test(label + 'config.js: a VIP takes several prefixes, IPv4 and IPv6, as one list', async () => {
		const { env, m } = await renderConfig(BASE_UCI);
		const vips = sectionOf(m, 'vip');
		const o = opt(vips, 'prefix');
		assert.strictEqual(o.constructor.name, 'DynamicList');
		const d = await dialog(env, vips, 'web');
		assert.deepStrictEqual(d.w('prefix').getValue(), [ '192.0.2.80/32' ], 'option prefix is one item');
		assert.strictEqual(d.add('prefix', '2001:db8::80/128'), null);
		assert.ok(/host bits/.test(d.add('prefix', '2001:db8::80/64')), 'an item with host bits is refused');
		d.type('prefix', '');
		assert.ok(await d.save());
		assert.deepStrictEqual(staged(env), [ [ 'set', 'web', 'prefix', [ '192.0.2.80/32', '2001:db8::80/128' ] ] ]);
		// An invalid item (one the file has) keeps the dialog from saving.
		const d2 = await dialog(env, vips, 'web');
		d2.set('prefix', [ '192.0.2.80/32', 'nope' ]);
		assert.strictEqual(await d2.save(), false, 'refused: nope');
	});

	// An invalid item typed and not added (no Enter, no +) refuses the
	// dialog's Save: ui.DynamicList would drop the text, and the dialog close
	// as if saved. A valid one is saved, as LuCI saves it.
	test(label + 'config.js: a DynamicList refuses Save while its typed item is invalid', async () => {
		const { env, m } = await renderConfig(BASE_UCI);
		const vips = sectionOf(m, 'vip');
		const d = await dialog(env, vips, 'web');
		assert.ok(/host bits/.test(d.type('prefix', '2001:db8::80/64')));
		assert.strictEqual(await d.save(), false, 'refused: the typed /64');
		assert.deepStrictEqual(staged(env), []);
		assert.ok(d.type('service', 'dns masq'));
		d.type('prefix', '2001:db8::80/128');
		assert.strictEqual(await d.save(), false, 'refused: the typed service');
		d.type('service', 'dnsmasq');
		assert.ok(await d.save());
		assert.deepStrictEqual(staged(env), [ [ 'set', 'web', 'prefix', [ '192.0.2.80/32', '2001:db8::80/128' ] ], [ 'set', 'web', 'service', [ 'dnsmasq' ] ] ]);
	});

	test(label + 'config.js: a hook timeout of 0 is refused (pathosd takes more than 0s)', async () => {
		const { m } = await renderConfig(BASE_UCI);
		const v = opt(sectionOf(m, 'pathosd'), 'hook_timeout').validate;
		[ '0', '0s', '0ms' ].forEach((x) => assert.ok(/more than 0s/.test(v('main', x)), x));
		[ '', '5s', '100ms' ].forEach((x) => assert.strictEqual(v('main', x), true, x));
	});

	test(label + 'config.js: duration, community and placeholder validation', async () => {
		const { m } = await renderConfig(BASE_UCI);
		const hold = opt(sectionOf(m, 'pathosd'), 'hold_time').validate;
		[ '90s', '500ms', '1m30s', '1.5s', '0', '', '%{PATHOSD_HOLD}' ].forEach((v) =>
			assert.strictEqual(hold('main', v), true, v));
		[ '90', 's', '5 s', '1d' ].forEach((v) => assert.notStrictEqual(hold('main', v), true, v));
		const comm = opt(sectionOf(m, 'vip'), 'community').validate;
		assert.strictEqual(comm('web', '65001:100'), true);
		assert.strictEqual(comm('web', '%{COMM}'), true);
		assert.notStrictEqual(comm('web', '65001'), true);
		const large = opt(sectionOf(m, 'vip'), 'large_community').validate;
		assert.strictEqual(large('web', '65001:1:666'), true);
		assert.notStrictEqual(large('web', '65001:1'), true);
	});

	// ------------------------------------------- Save & Apply

	// The staged configuration is checked by pathosd's rpcd plugin (the real
	// files/pathosd-staged.rpcd and the real pathosd, see the shim), so the
	// verdicts below are the daemon's own.

	// The refusal on the page: its list items, or null.
	function refused(node) {
		const bad = byClass(node, 'pathosd-invalid');
		assert.ok(bad.length <= 1, text(node));
		return bad.length ? findAll(bad[0], (n) => n.tag === 'li').map(text).concat(findAll(bad[0], (n) => n.tag === 'p').map(text)) : null;
	}

	// A change on the page (main's log level), then Save & Apply.
	async function applyChange(r, mode) {
		opt(sectionOf(r.m, 'pathosd'), 'log_level').widget('main').set('debug');
		await r.v.handleSaveApply(null, mode == null ? '0' : mode);
	}

	test(label + 'config.js: Save & Apply applies only what pathosd\'s own rules accept; a refusal is listed on the page and in a dialog, the changes stay staged', async () => {
		const r = await renderConfig(BASE_UCI);
		// What the page's rules cannot see: a duplicate name set with the
		// Name option.
		const d = await addDialog(r.env, sectionOf(r.m, 'vip'), 'web2');
		d.set('name', 'web').set('prefix', '192.0.2.81/32').set('always', true);
		assert.ok(await d.save());
		const before = plain(r.env.uci.changes);
		await r.v.handleSaveApply(null, '0');
		assert.deepStrictEqual(r.env.ui.applied, [], 'not applied');
		assert.ok(/duplicate VIP name "web"/.test(refused(r.node).join('\n')), text(r.node));
		assert.ok(/saved/.test(refused(r.node).join('\n')));
		assert.deepStrictEqual(plain(r.env.uci.changes), before, 'the changes stay staged');
		// Shown where the user is: a dialog.
		assert.ok(/Not applied/.test(r.env.ui.modal.title) && /duplicate VIP name "web"/.test(text(E('div', r.env.ui.modal.children))));
		await Promise.resolve(findAll(E('div', r.env.ui.modal.children), (n) => n.tag === 'button' && text(n) === 'Dismiss')[0].attrs.click());
		assert.strictEqual(r.env.ui.modal, null);

		// Valid: applied.
		const ok = await renderConfig(BASE_UCI);
		await applyChange(ok);
		assert.deepStrictEqual(ok.env.ui.applied, [ true ], 'applied');
		assert.strictEqual(refused(ok.node), null);
	});

	// pathosd names sections as the file does (vip 'api', @check[1]); the
	// page shows a VIP's Name and a check by its name and VIP.
	test(label + 'config.js: a refusal names what the page shows: a VIP by its Name, a check by its name and VIP, a field by its title; the daemon\'s words as tooltip', async () => {
		const sections = BASE_UCI.concat([
			{ '.type': 'vip', '.name': 'api', name: 'api-v2', prefix: '192.0.2.90/32', fail_action: 'withdraww' },
			{ '.type': 'check', '.name': 'cfg0b1', '.anonymous': true, vip: 'api', type: 'tcp' },
			{ '.type': 'neighbor', '.name': 'up_1', name: 'up-1', address: '192.0.2.254' }
		]).map((x) => (x['.name'] === 'main' ? { '.type': 'pathosd', '.name': 'main', enabled: '1', router_id: '192.0.2.1' } : x));
		const r = await renderConfig(sections);
		await applyChange(r);
		const items = findAll(byClass(r.node, 'pathosd-invalid')[0], (n) => n.tag === 'li');
		assert.deepStrictEqual(items.map(text).sort(), [
			'Check tcp of VIP api › Port: required (1..65535)',
			'General settings › Local AS: required and must be > 0',
			'Neighbor up-1 › Peer AS: required and must be > 0',
			'VIP api-v2 › When unhealthy: "withdraww" is not one of withdraw, lower_priority, drain_then_withdraw'
		]);
		assert.ok(items.some((li) => /^vip 'api' option fail_action \(line \d+\): "withdraww"/.test(li.attrs.title)), items.map((li) => li.attrs.title).join('\n'));
		assert.ok(items.some((li) => /^@check\[1\] \(line \d+\) option port: required/.test(li.attrs.title)));
		// The dialog says it the same way.
		assert.ok(/VIP api-v2 › When unhealthy/.test(text(E('div', r.env.ui.modal.children))));
	});

	// With pathosd not running the page used its own rules, which missed
	// these; now the daemon's rules decide whether or not it runs.
	const RULES = [
		[ 'no neighbor', BASE_UCI.filter((x) => x['.type'] !== 'neighbor'), /at least one neighbor is required/ ],
		[ 'no VIP', BASE_UCI.filter((x) => x['.type'] === 'pathosd' || x['.type'] === 'neighbor'), /at least one VIP is required/ ],
		[ 'unknown check in checks_policy', [ 'web', { checks_policy: 'dns && nope' } ], /unknown check "nope"/ ],
		[ 'IPv6 VIP without local_address_ipv6', [ 'web', { prefix: '2001:db8::80/128' } ], /Local IPv6 address: required/ ],
		[ 'two neighbors on one address', BASE_UCI.concat([ { '.type': 'neighbor', '.name': 'bird2', address: '127.0.0.1', peer_asn: '65000' } ]), /duplicate neighbor address 127\.0\.0\.1/ ],
		[ 'timeout >= interval', [ 'cfg0a5f56', { timeout: '2s' } ], /2s must be less than interval 1s/ ],
		[ 'community 65536:1', [ 'web', { community: [ '65536:1' ] } ], /"65536:1" is not a community/ ],
		[ 'fail_action typo', [ 'web', { fail_action: 'withdraww' } ], /"withdraww" is not one of/ ],
		[ 'neighbor without peer_asn', [ 'bird', { peer_asn: null } ], /Peer AS: required/ ],
		[ 'VIP prefix 010.10.1.1/32', [ 'web', { prefix: '010.10.1.1/32' } ], /"010\.10\.1\.1\/32" is not a valid prefix/ ],
		[ 'BFD without a source address', [ 'bird', { bfd: '1' } ], /Neighbor bird › BFD: BFD needs a source address/ ],
		[ 'BFD interval 5ms', [ 'bird', { bfd_required_minimum_receive: '5ms' } ], /Neighbor bird › BFD receive interval: 5ms is not within 10ms\.\.1m/ ]
	];
	const variant = (spec) => (!Array.isArray(spec[1]) || spec[1][0]['.type'] ? spec[1] : BASE_UCI.map((x) => {
		if (x['.name'] !== spec[1][0]) return x;
		const y = Object.assign({}, x, spec[1][1]);
		Object.keys(y).forEach((k) => { if (y[k] === null) delete y[k]; });
		return y;
	}));

	for (const absent of NOT_ON_UBUS)
	test(label + 'config.js: pathosd not running: Save & Apply still refuses what pathosd refuses, by its own rules (' + RULES.length + ' of them); not on ubus as ' + JSON.stringify(absent), async () => {
		const problems = [];
		for (const spec of RULES) {
			const r = await renderConfig(variant(spec), { 'pathosd.status': absent, 'pathosd.validate': absent });
			await applyChange(r);
			const why = refused(r.node);
			if (r.env.ui.applied.length || !why || !spec[2].test(why.join('\n')))
				problems.push(spec[0] + ': applied ' + JSON.stringify(r.env.ui.applied) + ', page: ' + (why ? why.join(' | ') : text(r.node)));
		}
		assert.deepStrictEqual(problems, []);
	});

	test(label + 'config.js: a fresh install with Enabled ticked and no AS: no "Save error" and no uncaught error; pathosd\'s refusal is on the page', async () => {
		const fresh = [ { '.type': 'pathosd', '.name': 'main', enabled: '0' } ];
		const r = await renderConfig(fresh, { 'pathosd.status': NOT_ON_UBUS[1] });
		opt(sectionOf(r.m, 'pathosd'), 'enabled').widget('main').set(true);
		await r.v.handleSaveApply(null, '0');
		assert.deepStrictEqual(r.env.ui.applied, []);
		assert.ok(!r.env.ui.modals.some((d) => /Save error/.test(d.title)), 'no "Save error"');
		const why = refused(r.node).join('\n');
		assert.ok(/Local AS: required/.test(why) && /at least one neighbor/.test(why) && /at least one VIP/.test(why), why);
		assert.deepStrictEqual(plain(r.env.uci.changes), [ [ 'set', 'main', 'enabled', '1' ] ]);
		// A value the form cannot take is said in words, not thrown.
		const bad = await renderConfig(BASE_UCI);
		opt(sectionOf(bad.m, 'pathosd'), 'asn').widget('main').set('sixty');
		await bad.v.handleSaveApply(null, '0');
		assert.deepStrictEqual(bad.env.ui.applied, []);
		assert.ok(/Not saved.*Local AS/.test(text(byClass(bad.node, 'pathosd-not-saved')[0] || '')), text(bad.node));
		assert.deepStrictEqual(plain(bad.env.uci.changes), []);
	});

	// uhttpd takes at most 64 KiB in one request and a staged configuration
	// of about 290 VIPs no longer fitted: the page then checked it itself.
	// Now the plugin reads the staged file: no size matters.
	test(label + 'config.js: 1,000 VIPs: Save & Apply has the whole staged configuration checked by pathosd (no request carries it)', async () => {
		const sections = BASE_UCI.slice(0, 2);
		for (let n = 0; n < 1000; n++) {
			sections.push({ '.type': 'vip', '.name': 'v' + n, prefix: '10.20.' + (n >> 8) + '.' + (n & 255) + '/32', fail_action: 'withdraw' });
			sections.push({ '.type': 'check', '.name': 'v' + n + '_tcp', vip: 'v' + n, type: 'tcp', host: '127.0.0.1', port: '8081' });
		}
		const bad = sections.concat([ { '.type': 'vip', '.name': 'last', name: 'v999', prefix: '10.30.0.1/32', always: '1' } ]);
		const r = await renderConfig(bad);
		await applyChange(r);
		assert.deepStrictEqual(r.env.ui.applied, []);
		assert.ok(/VIP v999 \(section last\) › Name: duplicate VIP name "v999"/.test(refused(r.node).join('\n')), refused(r.node));
		const ok = await renderConfig(sections);
		await applyChange(ok);
		assert.deepStrictEqual(ok.env.ui.applied, [ true ]);
		assert.ok(ok.env.rpc.calls.every((c) => JSON.stringify(c.args).length < 1000), 'no call carries the configuration');
	});

	// pathosd's plugin not loaded by rpcd (rpcd not reloaded after the
	// install), refused by the ACL, or without an answer.
	test(label + 'config.js: the check cannot run: nothing is applied, and the page says why; with nothing of pathosd staged, applied', async () => {
		const cases = [
			[ NOT_ON_UBUS[1], /rpcd has not loaded pathosd's plugin.*\/etc\/init\.d\/rpcd reload/ ],
			[ NOT_ON_UBUS[0], /rpcd has not loaded pathosd's plugin/ ],
			[ ACCESS_DENIED, /may not run the check/ ],
			[ { ubusStatus: 5 }, /pathosd validate gave no answer/ ],
			[ { error: 'uci could not read the staged configuration: uci: Parse error' }, /the check failed: uci could not read/ ],
			[ { valid: 'maybe' }, /unexpected answer/ ]
		];
		for (const [ reply, why ] of cases) {
			const r = await renderConfig(BASE_UCI, { 'pathosd-staged.validate': reply });
			await applyChange(r);
			assert.deepStrictEqual(r.env.ui.applied, [], JSON.stringify(reply));
			const said = (refused(r.node) || []).join('\n');
			assert.ok(why.test(said) && /Nothing was applied/.test(said), JSON.stringify(reply) + ': ' + said);
			assert.ok(!/ at |ClassConstructor|RPC call to/.test(seen(r.env, r.node)), seen(r.env, r.node));
		}
		const none = await renderConfig(BASE_UCI, { 'pathosd-staged.validate': NOT_ON_UBUS[1] });
		await none.v.handleSaveApply(null, '0');
		assert.deepStrictEqual(none.env.ui.applied, [ true ], 'no pathosd change: nothing of pathosd is committed');
	});

	// LuCI's header shows "Unsaved Changes: N"; its dialog's Save & Apply
	// calls ui.changes.apply() as the page's does.
	test(label + 'config.js, status.js: the header\'s Unsaved Changes → Save & Apply is checked the same way while a pathosd page is loaded', async () => {
		const bad = variant(RULES[5]);
		for (const page of [ 'config', 'status' ]) {
			const r = page === 'config' ? await renderConfig(bad) : await renderStatus({}, bad);
			r.env.uci.rpcd.set('main', { log_level: 'debug' });
			r.env.ui.changes.displayChanges();
			await findAll(E('div', r.env.ui.modal.children), (n) => n.tag === 'button' && text(n) === 'Save & Apply')[0].attrs.click({});
			assert.deepStrictEqual(r.env.ui.applied, [], page + ': not applied');
			assert.ok(/Not applied/.test(r.env.ui.modal.title) && /2s must be less than interval 1s/.test(text(E('div', r.env.ui.modal.children))),
				page + ': ' + text(E('div', r.env.ui.modal.children)));
			r.env.uci.rpcd.set('cfg0a5f56', { timeout: '500ms' });
			r.env.ui.changes.displayChanges();
			await findAll(E('div', r.env.ui.modal.children), (n) => n.tag === 'button' && text(n) === 'Save & Apply')[0].attrs.click({});
			assert.deepStrictEqual(r.env.ui.applied, [ true ], page + ': applied once valid');
		}
	});

	test(label + 'config.js: a rejected reload is shown above the form until a later one is applied', async () => {
		const { env, node } = await renderConfig(BASE_UCI, { 'pathosd.status': withReload(REJECTED) });
		const banner = byClass(node, 'pathosd-reload-rejected');
		assert.strictEqual(banner.length, 1, text(node));
		assert.deepStrictEqual(findAll(banner[0], (n) => n.tag === 'li').map(text), REJECTED.errors);
		assert.ok(hasClass(node.children[0], 'pathosd-reload'), 'first on the page');
		assert.strictEqual(env.poll.added.length, 1);
		assert.deepStrictEqual(plain(env.rpc.calls.filter((c) => c.method === 'status')), [ { object: 'pathosd', method: 'status', args: { limit: 0 } } ],
			'no VIP list: only last_reload is needed');
		env.rpc.replies['pathosd.status'] = withReload({ time: '2026-11-29T11:05:00Z', result: 'applied', errors: [] });
		await env.poll.added[0].fn();
		assert.strictEqual(byClass(node, 'pathosd-reload-rejected').length, 0);
		// pathosd not on ubus: the form still works, no banner.
		const down = await renderConfig(BASE_UCI, { 'pathosd.status': { ubusStatus: 4 } });
		assert.strictEqual(byClass(down.node, 'pathosd-reload-rejected').length, 0);
	});

	// A reload that took settings applying only after a restart (hooks):
	// Save & Apply says applied, the page says what waits for the restart.
	test(label + 'config.js: settings waiting for a restart are named above the form', async () => {
		const { env, node } = await renderConfig(BASE_UCI, { 'pathosd.status': withReload({ time: '2026-11-29T11:05:00Z', result: 'applied', errors: [], needs_restart: [ 'hooks' ] }) });
		const banner = byClass(node, 'pathosd-reload-restart');
		assert.strictEqual(banner.length, 1, text(node));
		assert.ok(/after a restart/.test(text(banner[0])) && /hooks/.test(text(banner[0])), text(banner[0]));
		env.rpc.replies['pathosd.status'] = withReload({ time: '2026-11-29T11:06:00Z', result: 'applied', errors: [], needs_restart: [] });
		await env.poll.added[0].fn();
		assert.strictEqual(byClass(node, 'pathosd-reload-restart').length, 0);
	});

	test(label + 'config.js: a reload applied only in part is shown above the form until a later one is applied', async () => {
		const { env, node } = await renderConfig(BASE_UCI, { 'pathosd.status': withReload(PARTIAL) });
		const banner = byClass(node, 'pathosd-reload-partial');
		assert.strictEqual(banner.length, 1, text(node));
		assert.ok(/applied the configuration only in part/.test(text(banner[0])), text(banner[0]));
		assert.deepStrictEqual(findAll(banner[0], (n) => n.tag === 'li').map(text), PARTIAL.errors);
		env.rpc.replies['pathosd.status'] = withReload({ time: '2026-11-29T11:05:00Z', result: 'applied', errors: [] });
		await env.poll.added[0].fn();
		assert.strictEqual(byClass(node, 'pathosd-reload-partial').length, 0);
	});

	test(label + 'config.js: rows carry the daemon\'s names: option name, section name, or the check\'s type', async () => {
		const { env, m } = await renderConfig(BASE_UCI.concat([
			{ '.type': 'check', '.name': 'cfg3', '.anonymous': true, vip: 'web', type: 'udp', name: 'udp_echo', port: '7' },
			{ '.type': 'neighbor', '.name': 'up_1', name: 'up-1', address: '192.0.2.254', peer_asn: '65010' }
		]));
		const checks = sectionOf(m, 'check');
		assert.deepStrictEqual(checks.rows().map((r) => r.title), [ 'dns', 'udp_echo' ]);
		assert.deepStrictEqual(sectionOf(m, 'neighbor').rows().map((r) => r.title), [ 'bird', 'up-1' ]);
		assert.deepStrictEqual(sectionOf(m, 'vip').rows().map((r) => r.title), [ 'web' ]);
		[ 'neighbor', 'vip', 'check' ].forEach((t) => assert.strictEqual(opt(sectionOf(m, t), 'name').constructor.name, 'Value', t + ' name'));
		// The dialog shows what the daemon calls the section when unset.
		let d = await dialog(env, checks, 'cfg0a5f56');
		assert.strictEqual(d.w('name').placeholder, 'dns');
		assert.strictEqual(d.title, 'pathosd - dns');
		await d.cancel();
		d = await addCheck(env, m, 'web', 'ping');
		assert.strictEqual(d.w('name').placeholder, 'web_ping');
		await d.cancel();
		assert.deepStrictEqual(plain(env.uci.changes), [], 'a cancelled new check leaves nothing');
		d = await dialog(env, sectionOf(m, 'neighbor'), 'bird');
		d.set('name', 'bird-1');
		assert.ok(await d.save());
		assert.deepStrictEqual(plain(env.uci.changes), [ [ 'set', 'bird', 'name', 'bird-1' ] ]);
	});

	// form.js's checkDepends() looks each option of each section up in the
	// page; in a browser that is a querySelector over the whole form, so a
	// grid of 1,000 VIPs and 1,000 checks took minutes, not rendering at all.
	test(label + 'config.js: 1,000 VIPs: the page does not look the grids\' options up row by row', async () => {
		const sections = [ BASE_UCI[0] ];
		for (let n = 0; n < 1000; n++) {
			sections.push({ '.type': 'vip', '.name': 'v' + n, prefix: '10.20.' + (n >> 8) + '.' + (n & 255) + '/32' });
			sections.push({ '.type': 'check', '.name': 'v' + n + '_tcp', vip: 'v' + n, type: 'tcp', port: '8081' });
		}
		const { env, m, v } = await renderConfig(sections);
		assert.ok(m.lookups < 200, m.lookups + ' lookups to render the page');
		m.lookups = 0;
		await v.handleSave();
		assert.ok(m.lookups < 200, m.lookups + ' lookups to save the page');
		assert.deepStrictEqual(plain(env.uci.changes), []);
		// A dialog still checks its own fields.
		const d = await dialog(env, sectionOf(m, 'check'), 'v999_tcp');
		d.set('port', '');
		assert.strictEqual(await d.save(), false);
		assert.deepStrictEqual(plain(d.w('vip').choices).length, 1000);
	});

	// form.js drew every row: 1,000 VIPs made a page 97,000 px tall, and the
	// check add row offered the 1,000 VIPs in one select.
	test(label + 'config.js: 1,000 VIPs: the VIP and check grids have a search and pages of 50; Add check takes a typed VIP name', async () => {
		const started = Date.now();
		const { env, m, node } = await renderConfig(manyVips(1000, true));
		const ms = Date.now() - started;
		const vips = sectionOf(m, 'vip'), checks = sectionOf(m, 'check');
		const titles = (sec) => sec.rows().map((r) => r.title);
		const parts = findAll(node, (n) => hasClass(n, 'pathosd-grid'));
		assert.strictEqual(parts.length, 2, 'two paged grids');
		const [ vipPart, checkPart ] = parts;
		assert.ok(/^VIPs/.test(text(vipPart)) && /^Checks/.test(text(checkPart)), 'titled');
		assert.deepStrictEqual(titles(vips).slice(0, 3), [ 'v0', 'v1', 'v2' ]);
		assert.strictEqual(titles(vips).length, 50);
		assert.strictEqual(titles(checks).length, 50);
		assert.ok(/VIPs 1–50 of 1000/.test(text(vipPart)) && /Checks 1–50 of 1000/.test(text(checkPart)), text(vipPart).slice(0, 80));
		await button(vipPart, 'pathosd-next').attrs.click({});
		assert.deepStrictEqual(titles(vips).slice(0, 1), [ 'v50' ]);
		assert.ok(/VIPs 51–100 of 1000/.test(text(vipPart)));
		await button(vipPart, 'pathosd-prev').attrs.click({});
		assert.deepStrictEqual(titles(vips).slice(0, 1), [ 'v0' ]);
		assert.strictEqual(button(vipPart, 'pathosd-prev').attrs.disabled, '');
		// Search: name, section or prefix, any case; checks also by VIP and type.
		await findAll(vipPart, (n) => hasClass(n, 'pathosd-find'))[0].attrs.input({ target: { value: 'V99' } });
		assert.deepStrictEqual(titles(vips), [ 'v99', 'v990', 'v991', 'v992', 'v993', 'v994', 'v995', 'v996', 'v997', 'v998', 'v999' ]);
		assert.ok(/VIPs 1–11 of 11/.test(text(vipPart)) && button(vipPart, 'pathosd-next').attrs.disabled === '');
		await findAll(vipPart, (n) => hasClass(n, 'pathosd-find'))[0].attrs.input({ target: { value: '10.20.3.231/32' } });
		assert.deepStrictEqual(titles(vips), [ 'v999' ]);
		await findAll(checkPart, (n) => hasClass(n, 'pathosd-find'))[0].attrs.input({ target: { value: 'v12_' } });
		assert.deepStrictEqual(titles(checks), [ 'v12_tcp' ]);
		// A dialog's save keeps the search and page.
		const d = await dialog(env, checks, 'v12_tcp');
		d.set('port', '8082');
		assert.ok(await d.save());
		assert.deepStrictEqual(titles(checks), [ 'v12_tcp' ]);
		// Add check: a text field with the VIPs as suggestions, not a select.
		const add = checks.renderSectionAdd();
		const vipField = findAll(add, (n) => hasClass(n, 'pathosd-add-vip'))[0];
		assert.strictEqual(vipField.tag, 'input');
		assert.strictEqual(findAll(add, (n) => n.tag === 'select' && n.children.length > 20).length, 0, 'no select of 1,000');
		assert.strictEqual(findAll(add, (n) => n.tag === 'datalist')[0].children.length, 1000, 'suggestions');
		const c = await addCheck(env, m, 'v999', 'ping');
		assert.strictEqual(c.w('vip').getValue(), 'v999');
		await c.cancel();
		await addCheck(env, m, 'nope', 'ping').catch(() => null);
		assert.ok(/No VIP is named "nope"/.test(text(E('div', env.ui.modal.children))), text(E('div', env.ui.modal.children)));
		console.log('# config.js with 1,000 VIPs and checks rendered in ' + ms + ' ms (stand-in, node)');
	});

	// LuCI read main's enabled by loading the whole package through rpcd's
	// uci get; past 1 MiB (about 2,500 checked or 7,500 "always" VIPs) rpcd
	// exited and every LuCI session with it.
	test(label + 'status.js, overview: 10,000 VIPs in the file: they read main\'s enabled alone, rpcd stays up', async () => {
		for (const enabled of [ '1', '0' ]) {
			const big = manyVips(10000, false).map((x) => (x['.name'] === 'main' ? Object.assign({}, x, { enabled }) : x));
			for (const absent of [ null, NOT_ON_UBUS[1] ]) {
				const replies = absent ? { 'pathosd.status': absent, 'service.list': {} } : { 'pathosd.status': pagedDaemon(10000) };
				const st = await renderStatus(replies, big);
				const ov = await renderOverview(replies['pathosd.status'], replies, big);
				for (const env of [ st.env, ov.env ]) {
					assert.strictEqual(env.uci.rpcd.dead, null);
					assert.deepStrictEqual(plain(env.uci.loaded), [], 'no uci.load');
					assert.ok(env.rpc.calls.filter((c) => c.object === 'uci').every((c) => c.args.section === 'main' && c.args.option === 'enabled'),
						JSON.stringify(env.rpc.calls.filter((c) => c.object === 'uci')));
				}
				if (absent) {
					const want = enabled === '1' ? 'stopped' : 'disabled';
					assert.strictEqual(byClass(st.root, 'pathosd-down')[0].attrs['data-service'], want);
					assert.strictEqual(badgeState(byClass(ov.node, 'pathosd-down')[0]), want);
				}
				else {
					assert.strictEqual(tableByClass(st.root, 'pathosd-vips').rows.length, 50);
					assert.ok(/VIPs10000 announced|VIPs9\d\d\d announced/.test(text(ov.node)), text(ov.node));
				}
			}
		}
	});

	test(label + 'config.js: 10,000 VIPs: the page does not load the file (rpcd would stop) and says why and what to do; 1,000 VIPs with a check each load', async () => {
		const r = await renderConfigPage(manyVips(10000, false));
		assert.strictEqual(r.env.uci.rpcd.dead, null);
		assert.deepStrictEqual(plain(r.env.uci.loaded), [], 'not loaded');
		assert.strictEqual(r.m, undefined, 'no form');
		const said = text(byClass(r.node, 'pathosd-unloaded')[0] || '');
		assert.ok(/too large to edit here: 10002 sections, \d+ kB/.test(said) && /pathosd validate --config \/etc\/config\/pathosd/.test(said) &&
			/\/etc\/init\.d\/pathosd reload/.test(said), said);
		assert.deepStrictEqual([ r.v.handleSave, r.v.handleSaveApply, r.v.handleReset ], [ null, null, null ], 'no Save buttons');
		// The header's apply is still checked here.
		r.env.uci.rpcd.set('v1', { prefix: 'nope' });
		r.env.ui.changes.displayChanges();
		await findAll(E('div', r.env.ui.modal.children), (n) => n.tag === 'button' && text(n) === 'Save & Apply')[0].attrs.click({});
		assert.deepStrictEqual(r.env.ui.applied, []);
		const ok = await renderConfig(manyVips(1000, true));
		assert.deepStrictEqual(plain(ok.env.uci.loaded).slice(0, 1), [ 'pathosd' ]);
		assert.strictEqual(ok.env.uci.rpcd.dead, null);
		// Not measured: not loaded either.
		const miss = await renderConfigPage(BASE_UCI, { 'pathosd-staged.size': NOT_ON_UBUS[1] });
		assert.deepStrictEqual(plain(miss.env.uci.loaded), []);
		assert.ok(/could not measure .*rpcd has not loaded pathosd's plugin/.test(text(miss.node)), text(miss.node));
	});

	test(label + 'pathosd-staged size: its estimate of rpcd\'s uci get reply is never below the bytes rpcd sends, and within 10 %', async () => {
		const odd = FULL_UCI.concat([ { '.type': 'check', '.name': 'cfg9', '.anonymous': true, vip: 'web', type: 'exec', command: '/bin/echo', arg: [ 'it\'s', 'x \\ y', '\u20ac\u20ac' ] } ]);
		for (const sections of [ BASE_UCI, odd, manyVips(1000, true), manyVips(10000, false) ]) {
			const env = makeEnv({ uci: sections });
			const est = plain(await env.rpc.declare({ object: 'pathosd-staged', method: 'size', reject: true })());
			const exact = env.uci.rpcd.replyBytes();
			assert.strictEqual(est.sections, sections.length);
			assert.ok(est.uci_get >= exact && est.uci_get <= exact * 1.1, sections.length + ' sections: estimate ' + est.uci_get + ', rpcd ' + exact);
		}
	});

	test(label + 'config.js: a fresh page says what pathosd needs to start, that a VIP is pessimized, not withdrawn, by default, and each check type\'s own rule', async () => {
		const fresh = await renderConfig([ { '.type': 'pathosd', '.name': 'main', enabled: '0' } ]);
		const start = text(byClass(fresh.node, 'pathosd-start')[0] || '');
		assert.ok(/at least one BGP neighbor and at least one VIP/.test(start) && /local AS and router ID/.test(start), start);
		assert.ok(/needs at least one neighbor/.test(sectionOf(fresh.m, 'neighbor').description));
		assert.ok(/needs at least one VIP/.test(sectionOf(fresh.m, 'vip').description) &&
			/by default pessimized and stays announced/.test(sectionOf(fresh.m, 'vip').description));
		assert.ok(/keeps an unhealthy VIP announced, only pessimized/.test(opt(sectionOf(fresh.m, 'vip'), 'fail_action').description));
		const { env, m, node } = await renderConfig(BASE_UCI.concat([
			{ '.type': 'check', '.name': 'web_grpc', vip: 'web', type: 'grpc', port: '50051' },
			{ '.type': 'check', '.name': 'web_http', vip: 'web', type: 'http' }
		]));
		assert.strictEqual(byClass(node, 'pathosd-start').length, 0, 'not once there are a neighbor and a VIP');
		const descs = {};
		for (const sid of [ 'cfg0a5f56', 'web_grpc', 'web_http' ]) {
			const d = await dialog(env, sectionOf(m, 'check'), sid);
			descs[sid] = [ 'port', 'method' ].filter((n) => d.active(n)).map((n) => n + ': ' + d.ns.getOption(n).description);
			await d.cancel();
		}
		assert.deepStrictEqual(descs, {
			cfg0a5f56: [ 'port: Empty: 53' ],
			web_grpc: [ 'port: Required', 'method: A unary method /package.Service/Method; empty: the gRPC health checking protocol (grpc.health.v1)' ],
			web_http: [ 'port: Empty: the port of the URL (80 for http://)', 'method: The request method; empty: GET' ]
		});
	});

	test(label + 'config.js: the drain-file example is per VIP; the port example per check type', async () => {
		const { env, m } = await renderConfig(BASE_UCI.concat([ { '.type': 'vip', '.name': 'dns', prefix: '192.0.2.53/32', always: '1' } ]));
		const vips = sectionOf(m, 'vip');
		assert.strictEqual((await dialog(env, vips, 'web')).w('lower_priority_file').placeholder, '/tmp/pathosd-web.drain');
		assert.strictEqual((await dialog(env, vips, 'dns')).w('lower_priority_file').placeholder, '/tmp/pathosd-dns.drain');
		assert.strictEqual((await dialog(env, sectionOf(m, 'check'), 'cfg0a5f56')).w('port').placeholder, '53');
		const d = await addCheck(env, m, 'web', 'http');
		assert.deepStrictEqual([ d.w('port').placeholder, d.w('method').placeholder ], [ '', 'GET' ]);
	});
}

// ------------------------------------------------------ the stand-ins

// The stand-ins themselves behave as LuCI does where the views failed: these
// would pass against a stand-in that hides the defects.
function shimTests() {
	const { makeUci, makeRpc } = require('./shim/luci_client.cjs');

	test('stand-in (form.js): an option whose depends are not met removes its UCI value on save; a twin option does not protect it', async () => {
		const env = makeEnv({ uci: [ { '.type': 'check', '.name': 'c', type: 'http', port: '8081' } ] });
		const m = new env.form.Map('pathosd');
		const s = m.section(env.form.NamedSection, 'c', 'check');
		const t = s.option(env.form.ListValue, 'type');
		[ 'http', 'dns' ].forEach((v) => t.value(v));
		s.option(env.form.Value, 'port').depends('type', 'http');
		const dnsPort = s.option(env.form.Value, 'dns_port');
		dnsPort.ucioption = 'port';
		dnsPort.depends('type', 'dns');
		await m.render();
		await m.save(null, true);
		assert.deepStrictEqual(plain(env.uci.changes), [ [ 'unset', 'c', 'port' ] ]);
	});

	test('stand-in (form.js): a ticked Flag is written on every save; a value equal to its default is removed', async () => {
		const env = makeEnv({ uci: [ { '.type': 'pathosd', '.name': 'main', enabled: '1', log_level: 'info' } ] });
		const m = new env.form.Map('pathosd');
		const s = m.section(env.form.NamedSection, 'main', 'pathosd');
		s.option(env.form.Flag, 'enabled').rmempty = false;
		const l = s.option(env.form.ListValue, 'log_level');
		[ 'info', 'debug' ].forEach((v) => l.value(v));
		l.default = 'info';
		await m.render();
		await m.save(null, true);
		assert.deepStrictEqual(staged(env), [ [ 'set', 'main', 'enabled', '1' ], [ 'unset', 'main', 'log_level' ] ]);
	});

	test('stand-in (ui.js): a select shows its first choice for a value it does not offer; a DynamicList does not validate its items', async () => {
		const env = makeEnv({ uci: [ { '.type': 'check', '.name': 'c', vip: 'gone', community: [ 'bad' ] } ] });
		const m = new env.form.Map('pathosd');
		const s = m.section(env.form.NamedSection, 'c', 'check');
		const v = s.option(env.form.ListValue, 'vip');
		[ 'web', 'dns' ].forEach((x) => v.value(x));
		const c = s.option(env.form.DynamicList, 'community');
		c.validate = (sid, x) => (x === '' || x === 'good' ? true : 'bad item');
		await m.render();
		assert.strictEqual(v.formvalue('c'), 'web');
		assert.ok(c.isValid('c'), 'items as loaded are not validated');
		assert.strictEqual(c.widget('c').add('worse'), 'bad item', 'a typed item is');
		await m.save(null, true);
		assert.deepStrictEqual(plain(env.uci.changes), [ [ 'set', 'c', 'vip', 'web' ] ]);
	});

	test('stand-in (uci.js): set of an equal value is staged; unset of a missing option is not; add() with an existing name shadows it', async () => {
		const uci = makeUci([ { '.type': 'vip', '.name': 'web', prefix: '192.0.2.1/32' } ]);
		await uci.load('pathosd');
		uci.set('pathosd', 'web', 'prefix', '192.0.2.1/32');
		uci.unset('pathosd', 'web', 'always');
		assert.strictEqual(uci.add('pathosd', 'vip', 'web'), 'web');
		assert.deepStrictEqual(plain(uci.get('pathosd', 'web')), { '.type': 'vip', '.name': 'web', '.create': 'web', '.anonymous': false, '.index': 1000 });
		assert.strictEqual(uci.sections('pathosd', 'vip').length, 2, 'listed twice');
		uci.set('pathosd', 'web', 'prefix', '10.0.0.1/32');
		await uci.save();
		assert.deepStrictEqual(plain(uci.changes), [ [ 'add', 'vip', 'web' ], [ 'set', 'web', 'prefix', '10.0.0.1/32' ], [ 'set', 'web', 'prefix', '192.0.2.1/32' ] ]);
		assert.strictEqual(uci.sections('pathosd', 'vip').length, 1);
	});

	test('stand-in (rpcd uci.c, ubusd): a uci get reply over 1 MiB stops rpcd, and every call after it is refused; one option is a small reply', async () => {
		const sections = [ { '.type': 'pathosd', '.name': 'main', enabled: '1' } ];
		for (let i = 0; i < 7500; i++) sections.push({ '.type': 'vip', '.name': 'v' + i, prefix: '10.0.' + (i >> 8) + '.' + (i & 255) + '/32', always: '1' });
		const env = makeEnv({ uci: sections });
		const get = env.rpc.declare({ object: 'uci', method: 'get', params: [ 'config', 'section', 'option' ], reject: true });
		assert.deepStrictEqual(plain(await get('pathosd', 'main', 'enabled')), { value: '1' });
		assert.ok(env.uci.rpcd.replyBytes() > 1048576, String(env.uci.rpcd.replyBytes()));
		const e = await env.uci.load('pathosd').then(() => null, (x) => x);
		assert.ok(e && /rpcd is not running/.test(e.message), String(e));
		const after = await get('pathosd', 'main', 'enabled').then(() => null, (x) => x);
		assert.ok(after && /Access denied/.test(after.message), String(after));
	});

	test('stand-in (rpc.js): a ubus error rejects with rpc.js\'s text and a JS stack frame; Access denied rejects too', async () => {
		const rpc = makeRpc({ 'pathosd.drain': { ubusStatus: 4 } }, { acl: ACL, role: 'read' });
		const drain = rpc.declare({ object: 'pathosd', method: 'drain', params: [ 'vip' ], reject: true });
		const status = rpc.declare({ object: 'pathosd', method: 'status', expect: { '': {} } });
		const e = await drain('web').then(() => null, (x) => x);
		assert.ok(/^RPC call to pathosd\/drain failed with error -32002: Access denied\n {2}at ClassConstructor\.handleCallReply \(.*rpc\.js/.test(e.message), e.message);
		const w = makeRpc({ 'pathosd.drain': { ubusStatus: 4 }, 'pathosd.status': { ubusStatus: 4 } });
		const e2 = await w.declare({ object: 'pathosd', method: 'drain', reject: true })().then(() => null, (x) => x);
		assert.ok(/^RPC call to pathosd\/drain failed with ubus code 4: Resource not found\n {2}at /.test(e2.message), e2.message);
		assert.deepStrictEqual(plain(await w.declare({ object: 'pathosd', method: 'status', expect: { '': {} } })()), {}, 'without reject: the expect default');
		assert.ok(status);
	});
}

// ------------------------------------------------------ static checks

function staticTests(files) {
	test('menu.d and acl.d are valid JSON; the menu points at existing views, depends on the ACL and uci', () => {
		const menu = JSON.parse(fs.readFileSync(MENU_FILE, 'utf8'));
		const top = menu['admin/services/pathosd'];
		assert.ok(top, 'Services → pathosd');
		assert.deepStrictEqual(top.depends, { acl: [ 'luci-app-pathosd' ], uci: { pathosd: true } });
		assert.ok(ACL[top.depends.acl[0]], 'the ACL the menu depends on exists');
		const views = Object.keys(menu).map((k) => menu[k].action).filter((a) => a.type === 'view').map((a) => a.path);
		assert.deepStrictEqual(views.sort(), [ 'pathosd/config', 'pathosd/status' ]);
		views.forEach((p) => assert.ok(fs.existsSync(path.join(RESOURCES, 'view', p + '.js')), p));
		JSON.parse(fs.readFileSync(path.join(ROOT, 'files/pathosd.acl.json'), 'utf8'));
	});

	test('ubusd ACL lets a non-root pathosd publish its object, send pathosd.* events, subscribe to procd and listen to netifd', () => {
		const a = JSON.parse(fs.readFileSync(path.join(ROOT, 'files/pathosd.acl.json'), 'utf8'));
		assert.deepStrictEqual(a, { user: 'pathosd', publish: [ 'pathosd' ], send: [ 'pathosd.*' ],
			subscribe: [ 'service' ], listen: [ 'network.interface', 'ubus.object.add' ] });
	});

	test('views stay ES5-ish for jsmin and old browsers: no arrow functions, template literals, let/const, classes', () => {
		files.forEach((f) => {
			const s = fs.readFileSync(f, 'utf8');
			assert.ok(!/=>/.test(s), f + ': arrow function');
			assert.ok(s.indexOf('`') < 0, f + ': template literal');
			assert.ok(!/(^|[^\w.'])(let|const|class)\s/m.test(s), f + ': let/const/class');
			assert.ok(/^'use strict';\n/.test(s), f + ': starts with \'use strict\'');
			assert.ok(/\nreturn (view|baseclass)\.extend\(\{/.test(s), f + ': returns view.extend or baseclass.extend');
		});
	});
}

// PATHOSD_JSMIN=/path/to/jsmin uses another minifier (stdin to stdout), for
// example LuCI's own luci-base/src/jsmin.c built on the side.
function jsmin(s) {
	if (process.env.PATHOSD_JSMIN) {
		const r = spawnSync(process.env.PATHOSD_JSMIN, [], { input: s, encoding: 'utf8' });
		return r.status === 0 ? r.stdout : null;
	}
	for (const py of [ '/usr/bin/python3', 'python3' ]) {
		const r = spawnSync(py, [ '-c', 'import sys, jsmin; sys.stdout.write(jsmin.jsmin(sys.stdin.read()))' ],
			{ input: s, encoding: 'utf8' });
		if (r.status === 0) return r.stdout;
	}
	return null;
}

const FILES = {
	status: path.join(VIEWS, 'status.js'),
	config: path.join(VIEWS, 'config.js'),
	overview: path.join(RESOURCES, 'view/status/include/70_pathosd.js'),
	common: path.join(RESOURCES, 'pathosd/common.js')
};
const read = (f) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : null);
const SRC = { status: read(FILES.status), config: read(FILES.config), overview: read(FILES.overview), common: read(FILES.common) };

function liveTests(file) {
	const live = JSON.parse(fs.readFileSync(file, 'utf8'));
	test('status.js renders a live /status: every peer, VIP and check, with its state', async () => {
		const env = statusEnv({ 'pathosd.status': live });
		env.filename = 'status.js';
		const v = loadView(SRC.status, env, { 'pathosd.common': SRC.common });
		const root = v.render(await v.load());
		assert.ok(live.peers.length > 0 && live.vips.length > 0, 'the live status has peers and VIPs');
		const peers = cellTexts(tableByClass(root, 'pathosd-peers').rows);
		assert.deepStrictEqual(peers.map((r) => [ r[0], r[1], r[3], r[4].split(' ')[0] ]),
			live.peers.map((p) => [ p.name, p.address, p.session_state, p.bfd ? p.bfd.state : '-' ]));
		const vips = cellTexts(tableByClass(root, 'pathosd-vips').rows);
		assert.deepStrictEqual(vips.map((r) => [ r[0], r[1], r[2].split(' ')[0], r[3].split(' ')[0], r[5] ]),
			live.vips.map((x) => [ x.name, x.prefix, x.state_name, x.health_name, String(x.as_path_prepend) ]));
		const checks = cellTexts(tableByClass(root, 'pathosd-checks').rows);
		const want = [];
		live.vips.forEach((x) => x.checks.forEach((c) => want.push([ x.name, c.name, c.type, c.health_name ])));
		assert.deepStrictEqual(checks.map((r) => r.slice(0, 4)), want);
		assert.ok(!/undefined|NaN|\[object/.test(text(root)), 'no undefined, NaN or [object ...] in the page');
	});
}

if (process.argv[2] === '--live') {
	liveTests(process.argv[3]);
} else {
	staticTests(Object.keys(FILES).map((k) => FILES[k]).filter((f) => fs.existsSync(f)));
	shimTests();
	viewTests('', SRC);
	const MIN = {};
	Object.keys(SRC).forEach((k) => { MIN[k] = SRC[k] == null ? null : jsmin(SRC[k]); });
	test('jsmin (python3-jsmin) minifies the views and pathosd/common.js', () => {
		Object.keys(SRC).forEach((k) => {
			assert.ok(SRC[k] != null, FILES[k] + ' exists');
			assert.ok(MIN[k], 'python3 -m jsmin failed: is python3-jsmin installed?');
			assert.ok(MIN[k].length < SRC[k].length, k + ' shrinks');
		});
	});
	if (Object.keys(MIN).every((k) => MIN[k] || SRC[k] == null))
		viewTests('jsmin: ', MIN);
}

(async () => {
	for (const t of tests) {
		try {
			await t.fn();
			console.log('ok - ' + t.name);
		} catch (e) {
			failures++;
			console.log('not ok - ' + t.name);
			String(e && e.stack || e).split('\n').slice(0, 14).forEach((l) => console.log('#   ' + l));
		}
	}
	process.exit(failures ? 1 : 0);
})();
