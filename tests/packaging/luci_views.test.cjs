'use strict';
// The LuCI views run in node:vm with LuCI's globals stubbed (E, _, L, rpc,
// view, poll, ui, dom, form, uci, cbi_update_table): status.js against a
// canned `ubus call pathosd status` reply, config.js against the option
// names of the daemon's UCI mapping (crates/pathosd-core/src/config/uci_map.rs), and every ubus
// method the views declare against the rpcd ACL. The views run twice: as
// written and after jsmin (LuCI minifies them at build time).
//
// Prints "ok - NAME" / "not ok - NAME" lines; exits 1 on any failure.
//
// `node luci_views.test.cjs --live STATUS.json` instead renders a /status
// document captured from a running pathosd (tests/packaging/bird_recipe_test.sh)
// and checks that every peer, VIP and check of it shows up.

const fs = require('fs');
const path = require('path');
const vm = require('vm');
const assert = require('assert');
const { spawnSync } = require('child_process');

const ROOT = path.resolve(__dirname, '..', '..');
const APP = path.join(ROOT, 'luci-app');
const VIEWS = path.join(APP, 'htdocs/luci-static/resources/view/pathosd');
const ACL_FILE = path.join(APP, 'root/usr/share/rpcd/acl.d/luci-app-pathosd.json');
const MENU_FILE = path.join(APP, 'root/usr/share/luci/menu.d/luci-app-pathosd.json');
const UCI_MAP = process.env.PATHOSD_UCI_MAP || path.join(ROOT, 'crates/pathosd-core/src/config/uci_map.rs');
const STATUS = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures/status.json'), 'utf8'));

let failures = 0;
const tests = [];
function test(name, fn) { tests.push({ name, fn }); }

// ---------------------------------------------------------------- stubs

// LuCI's client classes: no registry package carries them, so stand-ins
// that follow their semantics (tests/packaging/shim/luci_client.cjs).
const { E, text, findAll, hasClass, makeEnv } = require('./shim/luci_client.cjs');

// Runs a view's source as LuCI's loader does: the body of a function whose
// `return view.extend(...)` yields the view; 'require' lines are no-ops.
function loadView(source, env) {
	const ctx = vm.createContext({
		E, _: (s) => s, console,
		L: env.L,
		view: env.view,
		baseclass: env.baseclass,
		rpc: env.rpc, poll: env.poll, ui: env.ui, dom: env.dom,
		form: env.form, uci: env.uci,
		cbi_update_table(table, rows, placeholder) {
			table.rows = rows;
			table.placeholder = placeholder;
		},
		Promise, JSON, Math, String, Array, Object, RegExp, Date, isNaN, parseFloat
	});
	const wrapped = '(function() {\n' + source + '\n})';
	return vm.runInContext(wrapped, ctx, { filename: env.filename })();
}

// /etc/config/pathosd of the status tests: enabled.
const ENABLED_UCI = [ { '.type': 'pathosd', '.name': 'main', enabled: '1', asn: '65001' } ];

function statusEnv(replies, uciSections) {
	return makeEnv({
		uci: uciSections || ENABLED_UCI,
		replies: Object.assign({
			'pathosd.status': STATUS,
			'service.list': { pathosd: { instances: { instance1: { running: true, pid: 1234 } } } },
			'pathosd.check': (a) => ({ vip: a.vip, result: { success: false, detail: 'unexpected status 502' }, state: 'pessimized' }),
			'pathosd.drain': (a) => ({ vip: a.vip, drain: a.enable, state: a.enable ? 'pessimized' : 'announced' })
		}, replies || {})
	});
}

async function renderStatus(source, replies, uciSections) {
	const env = statusEnv(replies, uciSections);
	env.filename = 'status.js';
	const v = loadView(source, env);
	const data = await v.load();
	const root = v.render(data);
	return { env, v, root };
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

function cellTexts(rows) {
	return Array.from(rows, (r) => Array.from(r, text));
}

function badgeState(cell) {
	assert.ok(cell && cell.attrs && cell.attrs['data-state'] !== undefined, 'a state badge');
	return cell.attrs['data-state'];
}

function button(root, cls, attrs) {
	const b = findAll(root, (n) => n.tag === 'button' && hasClass(n, cls) &&
		Object.keys(attrs).every((k) => n.attrs[k] === attrs[k]));
	assert.strictEqual(b.length, 1, 'one button ' + cls + ' ' + JSON.stringify(attrs));
	return b[0];
}

// -------------------------------------------------------- the UCI mapping

// The option tables of crates/pathosd-core/src/config/uci_map.rs: const NAME: &[Row] = &[
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
		const rowRe = /\(\s*"([a-z0-9_]+)",\s*"([^"]*)",\s*(Scalar|List|Pairs),?\s*\)/g;
		let r;
		while ((r = rowRe.exec(m[2]))) {
			rows[r[1]] = r[3];
			paths[m[1] + '.' + r[1]] = r[2];
		}
		tables[m[1]] = rows;
	}
	return tables;
}

// ------------------------------------------------------------------ tests

// The daemon's defaults, from its JSON Schema (schema/pathosd-config-v1.schema.json),
// reached through the UCI mapping: option -> JSON path -> schema default.
const SCHEMA = JSON.parse(fs.readFileSync(path.join(ROOT, 'schema/pathosd-config-v1.schema.json'), 'utf8'));
const BY_TYPE = { http: 'HTTP', https: 'HTTP', dns: 'DNS', ping: 'PING', tcp: 'TCP', udp: 'UDP', grpc: 'GRPC', exec: 'EXEC' };
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
		if (!node) return { missing: true };
	}
	return { has: Object.prototype.hasOwnProperty.call(node, 'default'), value: node.default };
}

// What the form shows for an unset option: a Flag its default ('0' unless
// set), a select its default (else its first choice), a field its default
// or placeholder.
function formDefault(o) {
	if (o.constructor.name === 'Flag') return o.default;
	if (o.constructor.name === 'ListValue') {
		if (o.default != null) return o.default;
		return (o.keylist || [])[0] === '' ? null : (o.keylist || [])[0];
	}
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

// /etc/config/pathosd of the config tests: one neighbor, one VIP, one
// anonymous check, nothing set that has a daemon default.
const BASE_UCI = [
	{ '.type': 'pathosd', '.name': 'main', enabled: '1', asn: '65001', router_id: '192.0.2.1' },
	{ '.type': 'neighbor', '.name': 'bird', address: '127.0.0.1', peer_asn: '65000' },
	{ '.type': 'vip', '.name': 'web', prefix: '192.0.2.80/32' },
	{ '.type': 'check', '.name': 'cfg0a5f56', '.anonymous': true, vip: 'web', type: 'dns', query: [ 'web.lan.' ] }
];

function viewTests(label, statusSrc, configSrc, overviewSrc) {
	const REJECTED = {
		time: '2026-11-29T11:01:30Z',
		result: 'rejected',
		errors: [
			'config check (line 14) option timeout: 2s must be less than interval 1s',
			'vip \'lonely\' (line 9): exactly one of check or checks is required (or always: true)'
		]
	};
	const withReload = (r) => Object.assign(JSON.parse(JSON.stringify(STATUS)), { last_reload: r });

	async function renderOverview(reply) {
		const env = statusEnv({ 'pathosd.status': reply });
		env.filename = '70_pathosd.js';
		const w = loadView(overviewSrc, env);
		return { env, w, node: w.render(await w.load()) };
	}

	// ------------------------------------------------------- overview

	test(label + 'overview include: VIP states and established sessions counted', async () => {
		const { env, node } = await renderOverview(STATUS);
		assert.deepStrictEqual(Array.from(node.children, (tr) => Array.from(tr.children, text)), [
			[ 'VIPs', '1 announced, 1 pessimized, 0 withdrawn' ],
			[ 'BGP sessions', '1 of 2 established' ]
		]);
		const acl = JSON.parse(fs.readFileSync(ACL_FILE, 'utf8'))['luci-app-pathosd'];
		env.rpc.declared.forEach((d) => assert.ok((acl.read.ubus[d.object] || []).indexOf(d.method) >= 0,
			d.object + '.' + d.method + ' readable'));
	});

	test(label + 'overview include: hidden when pathosd is not on ubus (ubus NOT_FOUND or refused)', async () => {
		assert.strictEqual((await renderOverview({ ubusStatus: 4 })).node, null);
		assert.strictEqual((await renderOverview(new Error('Access denied'))).node, null);
	});

	test(label + 'overview include: a rejected reload is shown until one is applied', async () => {
		let { node } = await renderOverview(withReload(REJECTED));
		const row = byClass(node, 'pathosd-reload-rejected');
		assert.strictEqual(row.length, 1, text(node));
		assert.ok(/rejected.*2 errors.*previous configuration still runs/.test(text(row[0])), text(row[0]));
		assert.ok(byClass(row[0], 'label').length === 1, 'a LuCI label');
		node = (await renderOverview(withReload({ time: REJECTED.time, result: 'applied', errors: [] }))).node;
		assert.strictEqual(byClass(node, 'pathosd-reload-rejected').length, 0);
	});

	// ------------------------------------------------------- status.js

	test(label + 'status.js: peers table rows from ubus pathosd status', async () => {
		const { root } = await renderStatus(statusSrc);
		const rows = tableByClass(root, 'pathosd-peers').rows;
		assert.deepStrictEqual(cellTexts(rows), [
			[ 'bird', '127.0.0.1', '65000', 'established', 'yes', '1h 2m 3s', '1', '0', '-' ],
			[ 'upstream', '192.0.2.254', '65010', 'active', 'no', '-', '0', '2', 'connect: connection refused' ]
		]);
		assert.strictEqual(badgeState(rows[0][3]), 'established');
		assert.strictEqual(badgeState(rows[1][3]), 'active');
	});

	test(label + 'status.js: VIP rows with state and health badges, prepends, communities, drain source', async () => {
		const { root } = await renderStatus(statusSrc);
		const rows = tableByClass(root, 'pathosd-vips').rows;
		assert.deepStrictEqual(cellTexts(rows).map((r) => r.slice(0, 9)), [
			[ 'dns', '192.168.1.53/32', 'announced', 'healthy', 'all', '0', '65001:100', '-', 'dns_query: rise threshold reached' ],
			[ 'web', '192.168.1.80/32', 'pessimized', 'unhealthy', 'web_http && tcp', '6', '65000:666 65001:1:666', 'API', 'web_http: fall threshold reached' ]
		]);
		assert.deepStrictEqual(rows.map((r) => [ badgeState(r[2]), badgeState(r[3]) ]),
			[ [ 'announced', 'healthy' ], [ 'pessimized', 'unhealthy' ] ]);
		// The drain toggle offers the opposite of the current API drain.
		assert.strictEqual(text(button(root, 'pathosd-drain', { 'data-vip': 'dns' })), 'Drain');
		assert.strictEqual(text(button(root, 'pathosd-drain', { 'data-vip': 'web' })), 'Undrain');
	});

	test(label + 'status.js: state badges are LuCI label classes (theme and dark mode colours), no inline colours', async () => {
		const { root } = await renderStatus(statusSrc);
		const badges = findAll(root, (n) => n.attrs && n.attrs['data-state'] !== undefined);
		assert.ok(badges.length >= 6);
		const cls = {};
		badges.forEach((b) => {
			assert.strictEqual(b.attrs.style, undefined, 'no inline style on ' + b.attrs['data-state']);
			assert.ok(hasClass(b, 'label'), 'class label');
			cls[b.attrs['data-state']] = b.attrs['class'].split(' ').filter((c) => c !== 'label' && c !== 'pathosd-badge').join(' ');
		});
		assert.deepStrictEqual(cls, {
			established: 'success', active: '', announced: 'success', healthy: 'success',
			pessimized: 'warning', unhealthy: 'important'
		});
	});

	test(label + 'status.js: a VIP whose address is not local says so next to its health', async () => {
		const st = JSON.parse(JSON.stringify(STATUS));
		st.vips[0].local_address_assigned = false;
		st.vips[0].health_name = 'unhealthy';
		const { root } = await renderStatus(statusSrc, { 'pathosd.status': st });
		const rows = tableByClass(root, 'pathosd-vips').rows;
		assert.strictEqual(text(rows[0][3]), 'unhealthy address not local');
		assert.strictEqual(text(rows[1][3]), 'unhealthy', 'local_address_assigned null: no note');
	});

	test(label + 'status.js: one row per check; "Last run" is relative to the router clock, local time as tooltip', async () => {
		const { root } = await renderStatus(statusSrc);
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
		const { env, root } = await renderStatus(statusSrc);
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

	test(label + 'status.js: "Check now" calls ubus pathosd check {vip} and {vip, check}', async () => {
		const { env, root } = await renderStatus(statusSrc);
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
		const { env, root } = await renderStatus(statusSrc);
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

	test(label + 'status.js: a ubus error status (Drain on a VIP that no longer exists) is an error, not "done"', async () => {
		const st = JSON.parse(JSON.stringify(STATUS));
		st.vips.push(Object.assign(JSON.parse(JSON.stringify(st.vips[0])), { name: 'lonely', checks: [] }));
		const { env, root } = await renderStatus(statusSrc, {
			'pathosd.status': st,
			'pathosd.drain': (a) => (a.vip === 'lonely' ? { ubusStatus: 4 } : { vip: a.vip, drain: a.enable, state: 'pessimized' }),
			'pathosd.check': { ubusStatus: 9 }
		});
		await button(root, 'pathosd-drain', { 'data-vip': 'lonely' }).attrs.click({});
		// What the user sees, on the page or as a LuCI notification.
		const seen = env.ui.notes.map((n) => [ n.text, n.cls ]).concat(byClass(root, 'pathosd-result').map((n) =>
			[ text(n), [ 'info', 'danger' ].filter((c) => hasClass(n, c)).join() ]));
		assert.deepStrictEqual(seen, [ [ 'Drain lonely: RPC call to pathosd/drain failed with ubus code 4: Resource not found', 'danger' ] ]);
		let notes = byClass(root, 'pathosd-result');
		await button(root, 'pathosd-check', { 'data-vip': 'web' }).attrs.click({});
		notes = byClass(root, 'pathosd-result');
		assert.ok(hasClass(notes[0], 'danger') && /ubus code 9/.test(text(notes[0])), text(notes[0]));
		assert.ok(env.rpc.declared.every((d) => d.reject), 'every call rejects on a ubus error');
	});

	test(label + 'status.js: a refused call (e.g. ACL) is an error', async () => {
		const { root } = await renderStatus(statusSrc, { 'pathosd.drain': new Error('Access denied') });
		await button(root, 'pathosd-drain', { 'data-vip': 'dns' }).attrs.click({});
		assert.deepStrictEqual(byClass(root, 'pathosd-result').map((n) => [ text(n), hasClass(n, 'danger') ]),
			[ [ 'Drain dns: Access denied', true ] ]);
	});

	test(label + 'status.js: daemon not on ubus: says whether it is disabled, stopped, crashed or starting', async () => {
		const down = (svc, uciSections) => renderStatus(statusSrc,
			{ 'pathosd.status': { ubusStatus: 4 }, 'service.list': svc }, uciSections).then((r) => {
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

		d = await down({});
		assert.strictEqual(d.state, 'stopped');
		assert.ok(/enabled but procd runs no pathosd/.test(d.text) && !/Enable it/.test(d.text), d.text);

		d = await down({ pathosd: { instances: { instance1: { running: false, exit_code: 1 } } } });
		assert.strictEqual(d.state, 'crashed');
		assert.ok(/exited with code 1 and procd stopped restarting it/.test(d.text), d.text);

		d = await down({ pathosd: { instances: { instance1: { running: true, pid: 4242 } } } });
		assert.strictEqual(d.state, 'running');
		assert.ok(/runs \(PID 4242\) but is not \(yet\) registered on ubus/.test(d.text), d.text);
	});

	test(label + 'status.js: a rejected reload is shown prominently until a later one is applied', async () => {
		const { env, root } = await renderStatus(statusSrc, { 'pathosd.status': withReload(REJECTED) });
		let banner = byClass(root, 'pathosd-reload-rejected');
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

	test(label + 'status.js: read-only page (no Save/Apply/Reset)', async () => {
		const { v } = await renderStatus(statusSrc);
		assert.strictEqual(v.handleSave, null);
		assert.strictEqual(v.handleSaveApply, null);
		assert.strictEqual(v.handleReset, null);
	});

	test(label + 'views: every declared ubus method is granted by the rpcd ACL (reads in read, actions in write)', async () => {
		const acl = JSON.parse(fs.readFileSync(ACL_FILE, 'utf8'))['luci-app-pathosd'];
		const { env } = await renderStatus(statusSrc);
		const cfg = await renderConfig(BASE_UCI);
		const granted = (role, o, m) => ((acl[role].ubus || {})[o] || []).some((x) => x === m || x === '*');
		const declared = env.rpc.declared.concat(cfg.env.rpc.declared);
		assert.deepStrictEqual(Array.from(new Set(declared.map((d) => d.object + '.' + d.method))).sort(),
			[ 'pathosd.check', 'pathosd.drain', 'pathosd.status', 'service.list' ]);
		declared.forEach((d) => {
			assert.ok(granted('read', d.object, d.method) || granted('write', d.object, d.method),
				d.object + '.' + d.method + ' granted');
		});
		assert.ok(granted('read', 'pathosd', 'status') && granted('read', 'service', 'list'));
		assert.ok(granted('write', 'pathosd', 'check') && granted('write', 'pathosd', 'drain'));
		assert.ok(!granted('read', 'pathosd', 'check') && !granted('read', 'pathosd', 'drain'),
			'a read-only user cannot trigger or drain');
		assert.deepStrictEqual(acl.read.uci, [ 'pathosd' ]);
		assert.deepStrictEqual(acl.write.uci, [ 'pathosd' ]);
	});

	// ---------------------------------------------------------- config.js

	async function renderConfig(sections, replies) {
		const env = makeEnv({ uci: sections, replies: Object.assign({ 'pathosd.status': STATUS }, replies || {}) });
		env.filename = 'config.js';
		const v = loadView(configSrc, env);
		const data = await v.load();
		const node = await v.render(data);
		const m = env.form.pageMaps[0];
		assert.ok(m, 'the page has a form.Map');
		return { env, v, m, node };
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

	// The edit dialog of a grid row (or of a new section), as a user sees it.
	async function dialog(env, s, sid) {
		const m = sid == null ? await s.handleAdd(null) : await s.renderMoreOptionsModal(sid);
		const msid = m.children[0].section;
		const w = (name) => {
			const o = m.children[0].getOption(name);
			assert.ok(o, 'option ' + name + ' in the dialog');
			const wd = o.widget(msid);
			assert.ok(wd, 'a widget for ' + name);
			return wd;
		};
		return {
			m, sid: msid, w,
			set(name, v) { w(name).set(v); return this; },
			save() { return s.handleModalSave(m).then(() => env.ui.modal == null); },
			error(name) { return m.children[0].getOption(name).validationError(msid); }
		};
	}

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
		assert.deepStrictEqual(plain(type.keylist), [ 'http', 'https', 'dns', 'ping', 'tcp', 'udp', 'grpc', 'exec' ]);
		assert.deepStrictEqual(plain(opt(sectionOf(m, 'pathosd'), 'log_level').keylist), [ 'error', 'warn', 'info', 'debug' ]);
		[ 'community', 'large_community', 'lower_priority_community', 'lower_priority_large_community' ]
			.forEach((n) => assert.strictEqual(opt(vip, n).constructor.name, 'DynamicList', n));
		assert.strictEqual(opt(sectionOf(m, 'pathosd'), 'enabled').constructor.name, 'Flag');
		assert.strictEqual(opt(sectionOf(m, 'pathosd'), 'enabled').rmempty, false, 'enabled is always written');
	});

	test(label + 'config.js: every option is one the daemon reads, list-valued exactly where it takes `list`', async () => {
		const rows = uciRows();
		[ 'GLOBAL', 'NEIGHBOR', 'VIP', 'CHECK', 'HTTP', 'DNS', 'PING', 'TCP', 'UDP', 'GRPC', 'EXEC' ]
			.forEach((t) => assert.ok(rows[t] && Object.keys(rows[t]).length > 0, 'table ' + t + ' in uci_map.rs'));
		const { m } = await renderConfig(BASE_UCI);
		const problems = [];
		const kindOk = (o, kind) => (o.constructor.name === 'DynamicList') === (kind === 'List' || kind === 'Pairs');
		function against(sectionType, table, extra) {
			sectionOf(m, sectionType).children.forEach((o) => {
				if (extra.indexOf(o.option) >= 0) return;
				const uciName = o.ucioption || o.option;
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
		// Type options show only for their types; the common ones for all.
		sectionOf(m, 'check').children.forEach((o) => {
			if (rows.CHECK[o.option] || o.option === 'vip' || o.option === 'enabled') return;
			assert.ok(o.deps.length > 0 && o.deps.every((d) => Object.keys(d).join() === 'type'), o.option + ' depends on type');
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
				const shown = formDefault(o);
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
			'GLOBAL.api_write_timeout', 'GLOBAL.api_idle_timeout', 'GLOBAL.log_timestamps', 'GLOBAL.log_syslog' ]);
		const missing = [];
		for (const t of Object.keys(offered))
			for (const name of Object.keys(rows[t] || {}))
				if (!offered[t].has(name) && !expert.has(t + '.' + name)) missing.push(t + '.' + name);
		assert.deepStrictEqual(missing, []);
	});

	test(label + 'config.js: a neighbor is required unless unticked, which writes required \'0\'', async () => {
		const { env, m } = await renderConfig(BASE_UCI);
		const nb = sectionOf(m, 'neighbor');
		assert.strictEqual(gridRow(nb, 'bird').cells.required, 'Yes', 'no option: the daemon\'s required: true');
		let d = await dialog(env, nb, 'bird');
		assert.strictEqual(d.w('required').checked, true, 'the box is ticked');
		d.set('required', false);
		assert.ok(await d.save(), 'saved');
		assert.deepStrictEqual(env.uci.changes, [ [ 'set', 'bird', 'required', '0' ] ]);
		assert.strictEqual(gridRow(nb, 'bird').cells.required, 'No');
		d = await dialog(env, nb, 'bird');
		d.set('required', true);
		assert.ok(await d.save());
		assert.deepStrictEqual(env.uci.changes.slice(1), [ [ 'unset', 'bird', 'required' ] ], 'back to the default');
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

	test(label + 'config.js: the check dialog offers a VIP added on the same page, and saves it', async () => {
		const { env, m } = await renderConfig(BASE_UCI);
		const vips = sectionOf(m, 'vip');
		const checks = sectionOf(m, 'check');
		// Add VIP lonely...
		let d = await dialog(env, { handleAdd: () => vips.handleAdd(null, 'lonely') }, null);
		d.set('prefix', '192.0.2.99/32');
		assert.ok(await vips.handleModalSave(d.m).then(() => env.ui.modal == null), 'VIP saved');
		// ...then a check for it.
		d = await dialog(env, checks, null);
		assert.deepStrictEqual(plain(d.w('vip').choices), [ 'web', 'lonely' ]);
		d.set('vip', 'lonely').set('type', 'tcp').set('port', '80');
		assert.ok(await d.save(), 'check saved: ' + d.m.errors);
		const sets = env.uci.changes.filter((c) => c[0] === 'set' && c[1] === d.sid);
		assert.deepStrictEqual(sets.filter((c) => c[2] === 'vip'), [ [ 'set', d.sid, 'vip', 'lonely' ] ]);
		assert.deepStrictEqual(env.uci.changes.filter((c) => c[0] === 'add'), [ [ 'add', 'vip', 'lonely' ], [ 'add', 'check', d.sid ] ]);
	});

	test(label + 'config.js: a check\'s VIP is named by option name when set', async () => {
		const { env, m } = await renderConfig(BASE_UCI.concat([ { '.type': 'vip', '.name': 'web_2', name: 'web-2', prefix: '192.0.2.2/32', always: '1' } ]));
		const d = await dialog(env, sectionOf(m, 'check'), null);
		assert.deepStrictEqual(plain(d.w('vip').choices), [ 'web', 'web-2' ]);
	});

	test(label + 'config.js: the dialog refuses what the daemon would (timeout >= interval, 16-bit communities, names)', async () => {
		const { env, m } = await renderConfig(BASE_UCI);
		let d = await dialog(env, sectionOf(m, 'check'), 'cfg0a5f56');
		d.set('interval', '1s').set('timeout', '1s');
		assert.ok(/less than the interval/.test(d.error('timeout')), d.error('timeout'));
		assert.ok(/less than the interval/.test(d.error('interval')));
		assert.strictEqual(await d.save(), false, 'not saved');
		assert.deepStrictEqual(env.uci.changes, []);
		d.set('timeout', '');
		d.set('interval', '50ms');
		assert.ok(/less than the interval/.test(d.error('interval')), 'against the default timeout 100ms');
		assert.ok(/less than the interval/.test(d.error('timeout')), 'the default timeout 100ms against 50ms');
		d.set('interval', '2s').set('timeout', '1500ms');
		assert.strictEqual(d.error('timeout'), null);
		d.set('name', 'a-b');
		assert.ok(d.error('name'), 'check name a-b');
		d.set('name', 'all');
		assert.ok(/Reserved/.test(d.error('name')));
		d.set('name', 'dns_main');
		assert.strictEqual(d.error('name'), null);
		assert.ok(await d.save());
		assert.deepStrictEqual(env.uci.changes, [
			[ 'set', 'cfg0a5f56', 'name', 'dns_main' ],
			[ 'set', 'cfg0a5f56', 'interval', '2s' ],
			[ 'set', 'cfg0a5f56', 'timeout', '1500ms' ]
		]);

		d = await dialog(env, sectionOf(m, 'vip'), 'web');
		const comm = (v) => { d.set('community', [ v ]); return d.error('community'); };
		assert.strictEqual(comm('65535:65535'), null);
		assert.ok(comm('65536:1'), '65536:1');
		assert.ok(comm('1:65536'), '1:65536');
		d.set('community', []);
		d.set('large_community', [ '4294967295:1:2' ]);
		assert.strictEqual(d.error('large_community'), null);
		d.set('large_community', [ '4294967296:1:2' ]);
		assert.ok(d.error('large_community'));
		d.set('large_community', []);
		d.set('name', 'web-1.lan');
		assert.strictEqual(d.error('name'), null, 'VIP names take - and .');
		d.set('name', 'web 1');
		assert.ok(d.error('name'));
	});

	test(label + 'config.js: Save & Apply applies only what the daemon would take, and says why not', async () => {
		const { env, v, node } = await renderConfig(BASE_UCI.concat([
			{ '.type': 'vip', '.name': 'lonely', prefix: '192.0.2.99/32' },
			{ '.type': 'vip', '.name': 'both', prefix: '192.0.2.98/32', always: '1' },
			{ '.type': 'check', '.name': 'cfg1', '.anonymous': true, vip: 'both', type: 'ping' },
			{ '.type': 'check', '.name': 'cfg2', '.anonymous': true, vip: 'gone', type: 'ping' },
			{ '.type': 'check', '.name': 'cfg4', '.anonymous': true, vip: 'web', type: 'dns' },
			{ '.type': 'check', '.name': 'cfg5', '.anonymous': true, vip: 'web', type: 'udp', enabled: '0' }
		]));
		await v.handleSaveApply(null, '0');
		assert.deepStrictEqual(env.ui.applied, [], 'not applied');
		const bad = byClass(node, 'pathosd-invalid');
		assert.strictEqual(bad.length, 1, text(node));
		assert.deepStrictEqual(findAll(bad[0], (n) => n.tag === 'li').map(text), [
			'VIP web: two checks are named dns (set their name option)',
			'VIP lonely: needs a check, or "Always announce"',
			'VIP both: "Always announce" is set, so it must have no checks',
			'Check ping: no VIP named gone'
		]);

		const ok = await renderConfig(BASE_UCI);
		await ok.v.handleSaveApply(null, '0');
		assert.deepStrictEqual(ok.env.ui.applied, [ true ], 'applied');
		assert.strictEqual(byClass(ok.node, 'pathosd-invalid').length, 0);
	});

	test(label + 'config.js: a rejected reload is shown above the form until a later one is applied', async () => {
		const { env, node } = await renderConfig(BASE_UCI, { 'pathosd.status': withReload(REJECTED) });
		const banner = byClass(node, 'pathosd-reload-rejected');
		assert.strictEqual(banner.length, 1, text(node));
		assert.deepStrictEqual(findAll(banner[0], (n) => n.tag === 'li').map(text), REJECTED.errors);
		assert.ok(hasClass(node.children[0], 'pathosd-reload'), 'first on the page');
		assert.strictEqual(env.poll.added.length, 1);
		env.rpc.replies['pathosd.status'] = withReload({ time: '2026-11-29T11:05:00Z', result: 'applied', errors: [] });
		await env.poll.added[0].fn();
		assert.strictEqual(byClass(node, 'pathosd-reload-rejected').length, 0);
		// pathosd not on ubus: the form still works, no banner.
		const down = await renderConfig(BASE_UCI, { 'pathosd.status': { ubusStatus: 4 } });
		assert.strictEqual(byClass(down.node, 'pathosd-reload-rejected').length, 0);
	});

	test(label + 'config.js: rows carry the daemon\'s names: option name, section name, or the check\'s type', async () => {
		const { env, m } = await renderConfig(BASE_UCI.concat([
			{ '.type': 'check', '.name': 'cfg3', '.anonymous': true, vip: 'web', type: 'udp', name: 'udp_echo' },
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
		d = await dialog(env, checks, null);
		assert.strictEqual(d.w('name').placeholder, 'the type', 'a new check has no type yet');
		await checks.handleModalCancel(d.m);
		assert.deepStrictEqual(env.uci.changes, [], 'a cancelled new check leaves nothing');
		d = await dialog(env, sectionOf(m, 'neighbor'), 'bird');
		d.set('name', 'bird-1');
		assert.ok(await d.save());
		assert.deepStrictEqual(env.uci.changes, [ [ 'set', 'bird', 'name', 'bird-1' ] ]);
	});

	test(label + 'config.js: the drain-file example is per VIP', async () => {
		const { env, m } = await renderConfig(BASE_UCI.concat([ { '.type': 'vip', '.name': 'dns', prefix: '192.0.2.53/32', always: '1' } ]));
		const vips = sectionOf(m, 'vip');
		assert.strictEqual((await dialog(env, vips, 'web')).w('lower_priority_file').placeholder, '/tmp/pathosd-web.drain');
		assert.strictEqual((await dialog(env, vips, 'dns')).w('lower_priority_file').placeholder, '/tmp/pathosd-dns.drain');
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
}

// ------------------------------------------------------ static checks

function staticTests() {
	test('menu.d and acl.d are valid JSON; the menu points at existing views, depends on the ACL and uci', () => {
		const menu = JSON.parse(fs.readFileSync(MENU_FILE, 'utf8'));
		const acl = JSON.parse(fs.readFileSync(ACL_FILE, 'utf8'));
		const top = menu['admin/services/pathosd'];
		assert.ok(top, 'Services → pathosd');
		assert.deepStrictEqual(top.depends, { acl: [ 'luci-app-pathosd' ], uci: { pathosd: true } });
		assert.ok(acl[top.depends.acl[0]], 'the ACL the menu depends on exists');
		const views = Object.keys(menu).map((k) => menu[k].action).filter((a) => a.type === 'view').map((a) => a.path);
		assert.deepStrictEqual(views.sort(), [ 'pathosd/config', 'pathosd/status' ]);
		views.forEach((p) => assert.ok(fs.existsSync(path.join(APP, 'htdocs/luci-static/resources/view', p + '.js')), p));
		JSON.parse(fs.readFileSync(path.join(ROOT, 'files/pathosd.acl.json'), 'utf8'));
	});

	test('ubusd ACL lets a non-root pathosd publish its object and send pathosd.* events', () => {
		const a = JSON.parse(fs.readFileSync(path.join(ROOT, 'files/pathosd.acl.json'), 'utf8'));
		assert.deepStrictEqual(a, { user: 'pathosd', publish: [ 'pathosd' ], send: [ 'pathosd.*' ] });
	});

	test('views stay ES5-ish for jsmin and old browsers: no arrow functions, template literals, let/const, classes', () => {
		[ path.join(VIEWS, 'status.js'), path.join(VIEWS, 'config.js'), OVERVIEW ].forEach((f) => {
			const src = fs.readFileSync(f, 'utf8');
			assert.ok(!/=>/.test(src), f + ': arrow function');
			assert.ok(src.indexOf('`') < 0, f + ': template literal');
			assert.ok(!/(^|[^\w.'])(let|const|class)\s/m.test(src), f + ': let/const/class');
			assert.ok(/^'use strict';\n/.test(src), f + ': starts with \'use strict\'');
			assert.ok(/\nreturn (view|baseclass)\.extend\(\{/.test(src), f + ': returns view.extend or baseclass.extend');
		});
	});
}

// PATHOSD_JSMIN=/path/to/jsmin uses another minifier (stdin to stdout), for
// example LuCI's own luci-base/src/jsmin.c built on the side.
function jsmin(src) {
	if (process.env.PATHOSD_JSMIN) {
		const r = spawnSync(process.env.PATHOSD_JSMIN, [], { input: src, encoding: 'utf8' });
		return r.status === 0 ? r.stdout : null;
	}
	for (const py of [ '/usr/bin/python3', 'python3' ]) {
		const r = spawnSync(py, [ '-c', 'import sys, jsmin; sys.stdout.write(jsmin.jsmin(sys.stdin.read()))' ],
			{ input: src, encoding: 'utf8' });
		if (r.status === 0) return r.stdout;
	}
	return null;
}

const statusSrc = fs.readFileSync(path.join(VIEWS, 'status.js'), 'utf8');
const configSrc = fs.readFileSync(path.join(VIEWS, 'config.js'), 'utf8');
const OVERVIEW = path.join(APP, 'htdocs/luci-static/resources/view/status/include/70_pathosd.js');
const overviewSrc = fs.readFileSync(OVERVIEW, 'utf8');

function liveTests(file) {
	const live = JSON.parse(fs.readFileSync(file, 'utf8'));
	test('status.js renders a live /status: every peer, VIP and check, with its state', async () => {
		const { root } = await renderStatus(statusSrc, { 'pathosd.status': live });
		assert.ok(live.peers.length > 0 && live.vips.length > 0, 'the live status has peers and VIPs');
		const peers = cellTexts(tableByClass(root, 'pathosd-peers').rows);
		assert.deepStrictEqual(peers.map((r) => [ r[0], r[1], r[3] ]),
			live.peers.map((p) => [ p.name, p.address, p.session_state ]));
		const vips = cellTexts(tableByClass(root, 'pathosd-vips').rows);
		assert.deepStrictEqual(vips.map((r) => [ r[0], r[1], r[2], r[3], r[5] ]),
			live.vips.map((v) => [ v.name, v.prefix, v.state_name, v.health_name, String(v.as_path_prepend) ]));
		const checks = cellTexts(tableByClass(root, 'pathosd-checks').rows);
		const want = [];
		live.vips.forEach((v) => v.checks.forEach((c) => want.push([ v.name, c.name, c.type, c.health_name ])));
		assert.deepStrictEqual(checks.map((r) => r.slice(0, 4)), want);
		assert.ok(!/undefined|NaN|\[object/.test(text(root)), 'no undefined, NaN or [object ...] in the page');
	});
}

if (process.argv[2] === '--live') {
	liveTests(process.argv[3]);
} else {
	staticTests();
	viewTests('', statusSrc, configSrc, overviewSrc);
}

if (process.argv[2] !== '--live') {
	const minStatus = jsmin(statusSrc);
	const minConfig = jsmin(configSrc);
	const minOverview = jsmin(overviewSrc);
	test('jsmin (python3-jsmin) minifies both views', () => {
		assert.ok(minStatus && minConfig, 'python3 -m jsmin failed: is python3-jsmin installed?');
		assert.ok(minStatus.length < statusSrc.length && minConfig.length < configSrc.length);
	});
	if (minStatus && minConfig && minOverview)
		viewTests('jsmin: ', minStatus, minConfig, minOverview);
}

(async () => {
	for (const t of tests) {
		try {
			await t.fn();
			console.log('ok - ' + t.name);
		} catch (e) {
			failures++;
			console.log('not ok - ' + t.name);
			String(e && e.stack || e).split('\n').slice(0, 12).forEach((l) => console.log('#   ' + l));
		}
	}
	process.exit(failures ? 1 : 0);
})();
