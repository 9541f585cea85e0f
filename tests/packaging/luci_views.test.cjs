'use strict';
// The LuCI views run in node:vm with LuCI's globals stubbed (E, _, L, rpc,
// view, poll, ui, dom, form, uci, cbi_update_table): status.js against a
// canned `ubus call pathosd status` reply, config.js against the option
// names of the daemon's UCI mapping (src/config/uci_map.rs), and every ubus
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
const UCI_MAP = process.env.PATHOSD_UCI_MAP || path.join(ROOT, 'src/config/uci_map.rs');
const STATUS = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures/status.json'), 'utf8'));

let failures = 0;
const tests = [];
function test(name, fn) { tests.push({ name, fn }); }

// ---------------------------------------------------------------- stubs

// E(tag, [attrs], [children]) as LuCI's dom builder, into plain objects.
function E(tag, attrs, children) {
	if (Array.isArray(attrs) || typeof attrs === 'string' || (attrs && attrs.tag)) {
		children = attrs;
		attrs = {};
	}
	const kids = [];
	(function add(c) {
		if (c == null) return;
		if (Array.isArray(c)) c.forEach(add);
		else kids.push(c);
	})(children);
	return { tag: Array.isArray(tag) ? 'fragment' : tag, attrs: attrs || {}, children: kids };
}

function text(node) {
	if (node == null) return '';
	if (typeof node !== 'object') return String(node);
	return node.children.map(text).join('');
}

function findAll(node, pred, out) {
	out = out || [];
	if (node && typeof node === 'object') {
		if (pred(node)) out.push(node);
		(node.children || []).forEach((c) => findAll(c, pred, out));
		(node.rows || []).forEach((r) => r.forEach((c) => findAll(c, pred, out)));
	}
	return out;
}

// rpc.declare records each declaration and call; replies come from
// `replies[object.method]` (a value, an Error to reject with, or a function
// of the arguments).
function makeRpc(replies) {
	const declared = [];
	const calls = [];
	return {
		declared,
		calls,
		replies,
		declare(opts) {
			declared.push({ object: opts.object, method: opts.method });
			return function() {
				const args = {};
				(opts.params || []).forEach((p, i) => { args[p] = arguments[i]; });
				// What rpc.js sends: JSON, where undefined members vanish.
				const sent = JSON.parse(JSON.stringify(args));
				calls.push({ object: opts.object, method: opts.method, args: sent });
				let r = replies[opts.object + '.' + opts.method];
				if (typeof r === 'function') r = r(sent);
				return r instanceof Error ? Promise.reject(r) : Promise.resolve(r);
			};
		}
	};
}

function makeForm() {
	const made = { maps: [] };
	function option(cls, sec, tab, name, title, description) {
		const o = {
			cls, name, tab, title, description, section: sec,
			deps: [], values: [],
			depends(k, v) { this.deps.push([k, v]); },
			value(k, l) { this.values.push([k, l]); }
		};
		sec.options.push(o);
		return o;
	}
	function Section(cls, args) {
		this.cls = cls;
		this.args = args;
		this.options = [];
		this.tabs = [];
	}
	Section.prototype.tab = function(name, title) { this.tabs.push(name); };
	Section.prototype.option = function(cls, name, title, description) {
		return option(cls.kind, this, null, name, title, description);
	};
	Section.prototype.taboption = function(tab, cls, name, title, description) {
		assert.ok(this.tabs.indexOf(tab) >= 0, 'tab ' + tab + ' declared before use');
		return option(cls.kind, this, tab, name, title, description);
	};
	function Map(config, title, description) {
		this.config = config;
		this.sections = [];
		made.maps.push(this);
	}
	Map.prototype.section = function(cls) {
		const s = new Section(cls.kind, Array.prototype.slice.call(arguments, 1));
		this.sections.push(s);
		return s;
	};
	Map.prototype.render = function() { return Promise.resolve(this); };
	const form = { Map, made };
	['NamedSection', 'TypedSection', 'GridSection', 'TableSection',
		'Flag', 'Value', 'ListValue', 'DynamicList', 'MultiValue', 'DummyValue', 'Button']
		.forEach((k) => { form[k] = { kind: k }; });
	return form;
}

function makeUi() {
	const notes = [];
	return {
		notes,
		addNotification(title, body, cls) { notes.push({ text: text(body), cls }); },
		createHandlerFn(ctx, fn) {
			const bound = Array.prototype.slice.call(arguments, 2);
			return function(ev) {
				const f = typeof fn === 'function' ? fn : ctx[fn];
				return f.apply(ctx, bound.concat([ev]));
			};
		}
	};
}

// Runs a view's source as LuCI's loader does: the body of a function whose
// `return view.extend(...)` yields the view; 'require' lines are no-ops.
function loadView(source, env) {
	const ctx = vm.createContext({
		E, _: (s) => s, console,
		L: {
			resolveDefault(p, d) { return Promise.resolve(p).catch(() => d); }
		},
		view: { extend(o) { return o; } },
		baseclass: { extend(o) { return o; } },
		rpc: env.rpc, poll: env.poll, ui: env.ui, dom: env.dom,
		form: env.form, uci: env.uci,
		cbi_update_table(table, rows, placeholder) {
			table.rows = rows;
			table.placeholder = placeholder;
		},
		Promise, JSON, Math, String, Array, Object, RegExp, isNaN
	});
	const wrapped = '(function() {\n' + source + '\n})';
	return vm.runInContext(wrapped, ctx, { filename: env.filename })();
}

function statusEnv(replies) {
	const env = {
		rpc: makeRpc(Object.assign({
			'pathosd.status': STATUS,
			'service.list': { pathosd: { instances: { instance1: { running: true } } } },
			'pathosd.check': (a) => ({ vip: a.vip, result: { success: false, detail: 'unexpected status 502' }, state: 'pessimized' }),
			'pathosd.drain': (a) => ({ vip: a.vip, drain: a.enable, state: a.enable ? 'pessimized' : 'announced' })
		}, replies || {})),
		poll: { added: [], add(fn, interval) { this.added.push({ fn, interval }); } },
		ui: makeUi(),
		dom: { content(node, children) { node.children = [].concat(children); return node; } },
		form: makeForm(),
		uci: null
	};
	return env;
}

async function renderStatus(source, replies) {
	const env = statusEnv(replies);
	env.filename = 'status.js';
	const v = loadView(source, env);
	const data = await v.load();
	const root = v.render(data);
	return { env, v, root };
}

function tableByClass(root, cls) {
	const t = findAll(root, (n) => n.tag === 'table' && (n.attrs['class'] || '').split(' ').indexOf(cls) >= 0);
	assert.strictEqual(t.length, 1, 'one table ' + cls);
	return t[0];
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
	const b = findAll(root, (n) => n.tag === 'button' &&
		(n.attrs['class'] || '').split(' ').indexOf(cls) >= 0 &&
		Object.keys(attrs).every((k) => n.attrs[k] === attrs[k]));
	assert.strictEqual(b.length, 1, 'one button ' + cls + ' ' + JSON.stringify(attrs));
	return b[0];
}

// -------------------------------------------------------- the UCI mapping

// The option tables of src/config/uci_map.rs: const NAME: &[Row] = &[
// ("uci_name", "json.path", Kind), ... ];
function uciRows() {
	const src = fs.readFileSync(UCI_MAP, 'utf8');
	const tables = {};
	const re = /const ([A-Z_]+): &\[Row\] = &\[([\s\S]*?)\n\];/g;
	let m;
	while ((m = re.exec(src))) {
		const rows = {};
		const rowRe = /\(\s*"([a-z0-9_]+)",\s*"[^"]*",\s*(Scalar|List|Pairs),?\s*\)/g;
		let r;
		while ((r = rowRe.exec(m[2]))) rows[r[1]] = r[2];
		tables[m[1]] = rows;
	}
	return tables;
}

// ------------------------------------------------------------------ tests

function viewTests(label, statusSrc, configSrc, overviewSrc) {
	async function renderOverview(reply) {
		const env = statusEnv({ 'pathosd.status': reply });
		env.filename = '70_pathosd.js';
		const w = loadView(overviewSrc, env);
		return { env, w, node: w.render(await w.load()) };
	}

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

	test(label + 'overview include: hidden when pathosd is not on ubus', async () => {
		const { node } = await renderOverview(new Error('Object not found'));
		assert.strictEqual(node, null);
	});

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

	test(label + 'status.js: a VIP whose address is not local says so next to its health', async () => {
		const st = JSON.parse(JSON.stringify(STATUS));
		st.vips[0].local_address_assigned = false;
		st.vips[0].health_name = 'unhealthy';
		const { root } = await renderStatus(statusSrc, { 'pathosd.status': st });
		const rows = tableByClass(root, 'pathosd-vips').rows;
		assert.strictEqual(text(rows[0][3]), 'unhealthy address not local');
		assert.strictEqual(text(rows[1][3]), 'unhealthy', 'local_address_assigned null: no note');
	});

	test(label + 'status.js: one row per check with counters, last result and detail', async () => {
		const { root } = await renderStatus(statusSrc);
		const rows = tableByClass(root, 'pathosd-checks').rows;
		assert.deepStrictEqual(cellTexts(rows).map((r) => r.slice(0, 8)), [
			[ 'dns', 'dns_query', 'dns', 'healthy', '12 / 0', 'pass (1.25 ms)', 'NOERROR, 1 answer', '2026-11-29T11:02:02Z' ],
			[ 'web', 'web_http', 'http', 'unhealthy', '0 / 4', 'fail (3.5 ms)', 'unexpected status 502 (want [200-399])', '2026-11-29T11:02:01Z' ],
			[ 'web', 'tcp', 'tcp', 'healthy', '30 / 0', '-', '-', '-' ]
		]);
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
		assert.strictEqual(env.ui.notes.length, 1);
		assert.strictEqual(env.ui.notes[0].cls, 'info');
		assert.ok(/failed \(unexpected status 502\), VIP state pessimized/.test(env.ui.notes[0].text), env.ui.notes[0].text);

		await button(root, 'pathosd-check-one', { 'data-vip': 'web', 'data-check': 'tcp' }).attrs.click({});
		assert.deepStrictEqual(env.rpc.calls.filter((c) => c.method === 'check')[1],
			{ object: 'pathosd', method: 'check', args: { vip: 'web', check: 'tcp' } });
	});

	test(label + 'status.js: drain toggle calls ubus pathosd drain {vip, enable}', async () => {
		const { env, root } = await renderStatus(statusSrc);
		await button(root, 'pathosd-drain', { 'data-vip': 'dns' }).attrs.click({});
		await button(root, 'pathosd-drain', { 'data-vip': 'web' }).attrs.click({});
		assert.deepStrictEqual(env.rpc.calls.filter((c) => c.method === 'drain'), [
			{ object: 'pathosd', method: 'drain', args: { vip: 'dns', enable: true } },
			{ object: 'pathosd', method: 'drain', args: { vip: 'web', enable: false } }
		]);
		assert.deepStrictEqual(env.ui.notes.map((n) => n.cls), [ 'info', 'info' ]);
	});

	test(label + 'status.js: a refused call (e.g. ACL) becomes a danger notification', async () => {
		const { env, root } = await renderStatus(statusSrc, { 'pathosd.drain': new Error('Access denied') });
		await button(root, 'pathosd-drain', { 'data-vip': 'dns' }).attrs.click({});
		assert.deepStrictEqual(env.ui.notes, [ { text: 'Drain dns: Access denied', cls: 'danger' } ]);
	});

	test(label + 'status.js: daemon not on ubus: says whether procd runs it, empty tables', async () => {
		let r = await renderStatus(statusSrc, {
			'pathosd.status': new Error('Object not found'),
			'service.list': {}
		});
		assert.ok(/pathosd is not running/.test(text(r.root)), text(r.root));
		const vips = tableByClass(r.root, 'pathosd-vips');
		assert.deepStrictEqual(plain(vips.rows), []);
		assert.strictEqual(text(vips.placeholder), 'No data');

		r = await renderStatus(statusSrc, { 'pathosd.status': new Error('Object not found') });
		assert.ok(/not \(yet\) registered on ubus/.test(text(r.root)), text(r.root));
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
		const granted = (role, o, m) => ((acl[role].ubus || {})[o] || []).some((x) => x === m || x === '*');
		const declared = env.rpc.declared;
		assert.deepStrictEqual(declared.map((d) => d.object + '.' + d.method).sort(),
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

	async function renderConfig(vipSections) {
		const env = statusEnv();
		env.filename = 'config.js';
		const loaded = [];
		env.uci = {
			load(p) { loaded.push(p); return Promise.resolve(); },
			sections(p, t) {
				assert.strictEqual(p, 'pathosd');
				return t === 'vip' ? vipSections : [];
			}
		};
		const v = loadView(configSrc, env);
		await v.load();
		const m = await v.render();
		return { m, loaded };
	}

	function sectionOf(m, type) {
		const s = m.sections.filter((x) => (x.cls === 'NamedSection' ? x.args[1] : x.args[0]) === type);
		assert.strictEqual(s.length, 1, 'one section of type ' + type);
		return s[0];
	}

	function opt(s, name) {
		const o = s.options.filter((x) => x.name === name);
		assert.strictEqual(o.length, 1, 'one option ' + name + ' in ' + s.args);
		return o[0];
	}

	test(label + 'config.js: form.Map(pathosd) with NamedSection main and GridSections neighbor, vip, check', async () => {
		const { m, loaded } = await renderConfig([]);
		assert.deepStrictEqual(loaded, [ 'pathosd' ]);
		assert.strictEqual(m.config, 'pathosd');
		assert.deepStrictEqual(m.sections.map((s) => [ s.cls ].concat(s.args.slice(0, s.cls === 'NamedSection' ? 2 : 1))), [
			[ 'NamedSection', 'main', 'pathosd' ],
			[ 'GridSection', 'neighbor' ],
			[ 'GridSection', 'vip' ],
			[ 'GridSection', 'check' ]
		]);
	});

	test(label + 'config.js: ListValues for fail_action, check type and log_level; DynamicLists for communities', async () => {
		const { m } = await renderConfig([]);
		const vip = sectionOf(m, 'vip');
		const check = sectionOf(m, 'check');
		const fa = opt(vip, 'fail_action');
		assert.strictEqual(fa.cls, 'ListValue');
		assert.deepStrictEqual(fa.values.map((v) => v[0]).sort(), [ 'drain_then_withdraw', 'lower_priority', 'withdraw' ]);
		assert.strictEqual(fa.default, 'lower_priority', 'the daemon\'s default');
		const type = opt(check, 'type');
		assert.strictEqual(type.cls, 'ListValue');
		assert.deepStrictEqual(type.values.map((v) => v[0]), [ 'http', 'https', 'dns', 'ping', 'tcp', 'udp', 'grpc', 'exec' ]);
		assert.deepStrictEqual(opt(sectionOf(m, 'pathosd'), 'log_level').values.map((v) => v[0]), [ 'error', 'warn', 'info', 'debug' ]);
		[ 'community', 'large_community', 'lower_priority_community', 'lower_priority_large_community' ]
			.forEach((n) => assert.strictEqual(opt(vip, n).cls, 'DynamicList', n));
		assert.strictEqual(opt(sectionOf(m, 'pathosd'), 'enabled').cls, 'Flag');
		assert.strictEqual(opt(sectionOf(m, 'pathosd'), 'enabled').rmempty, false, 'enabled is always written');
	});

	test(label + 'config.js: a check\'s vip is chosen among the VIP sections (option name wins)', async () => {
		const { m } = await renderConfig([ { '.name': 'web' }, { '.name': 'cfg0a1b2c', name: 'dns' } ]);
		assert.deepStrictEqual(opt(sectionOf(m, 'check'), 'vip').values.map((v) => v[0]), [ 'web', 'dns' ]);
	});

	test(label + 'config.js: every option is one the daemon reads, list-valued exactly where it takes `list`', async () => {
		const rows = uciRows();
		[ 'GLOBAL', 'NEIGHBOR', 'VIP', 'CHECK', 'HTTP', 'DNS', 'PING', 'TCP', 'UDP', 'GRPC', 'EXEC' ]
			.forEach((t) => assert.ok(rows[t] && Object.keys(rows[t]).length > 0, 'table ' + t + ' in uci_map.rs'));
		const byType = { http: 'HTTP', https: 'HTTP', dns: 'DNS', ping: 'PING', tcp: 'TCP', udp: 'UDP', grpc: 'GRPC', exec: 'EXEC' };
		const { m } = await renderConfig([]);
		const problems = [];
		const kindOk = (o, kind) => (o.cls === 'DynamicList') === (kind === 'List' || kind === 'Pairs');
		function against(sectionType, table, extra) {
			sectionOf(m, sectionType).options.forEach((o) => {
				if (extra.indexOf(o.name) >= 0) return;
				const typeDeps = o.deps.filter((d) => d[0] === 'type').map((d) => d[1]);
				const tables = typeDeps.length ? typeDeps.map((t) => byType[t]) : [ table ];
				tables.forEach((tn) => {
					const kind = rows[tn][o.name];
					if (!kind) problems.push(sectionType + ' option ' + o.name + ' is not in ' + tn);
					else if (!kindOk(o, kind)) problems.push(sectionType + ' option ' + o.name + ' is ' + o.cls + ' but ' + kind + ' in ' + tn);
				});
			});
		}
		against('pathosd', 'GLOBAL', [ 'enabled' ]);
		against('neighbor', 'NEIGHBOR', [ 'enabled' ]);
		against('vip', 'VIP', [ 'enabled' ]);
		against('check', 'CHECK', [ 'vip', 'enabled' ]);
		assert.deepStrictEqual(problems, []);
		// Type options show only for their types; the common ones for all.
		sectionOf(m, 'check').options.forEach((o) => {
			if (rows.CHECK[o.name] || o.name === 'vip' || o.name === 'enabled') return;
			assert.ok(o.deps.length > 0 && o.deps.every((d) => d[0] === 'type'), o.name + ' depends on type');
		});
	});

	test(label + 'config.js: duration, community and placeholder validation', async () => {
		const { m } = await renderConfig([]);
		const hold = opt(sectionOf(m, 'pathosd'), 'hold_time').validate;
		[ '90s', '500ms', '1m30s', '1.5s', '0', '', '%{PATHOSD_HOLD}' ].forEach((v) =>
			assert.strictEqual(hold('main', v), true, v));
		[ '90', 's', '5 s', '1d' ].forEach((v) => assert.notStrictEqual(hold('main', v), true, v));
		const comm = opt(sectionOf(m, 'vip'), 'community').validate;
		assert.strictEqual(comm('web', '65001:100'), true);
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
