'use strict';
// Stand-ins for LuCI's client classes, for running the pathosd views in
// node:vm. CI cannot fetch LuCI, so this file re-implements, in our own code,
// the behaviour of openwrt/luci modules/luci-base/htdocs/luci-static/resources
// (form.js, uci.js, rpc.js, ui.js, validation.js, luci.js) where the views
// depend on it. The function names in the comments are the real ones; where
// the real behaviour is surprising, the comment says so, because the views
// were wrong exactly there:
//
// * form.js AbstractValue.parse() REMOVES the UCI value of an option whose
//   `depends` are not met (unless `retain`), and removes one whose form value
//   equals its `default`; AbstractValue.remove() spares it only when another
//   ACTIVE option with an explicit `ucioption` aliases the same UCI option.
//   FlagValue.parse() writes on every save unless the value equals `default`.
// * uci.js stages `set` even for a value equal to the current one, drops an
//   `unset` of an option the section does not have, and add() with the name
//   of an existing section creates a second, empty section of that name that
//   get() returns instead of the old one; save() sends the changes to rpcd
//   and reloads what rpcd then returns (the staged values).
// * rpc.js rejects with "RPC call to OBJ/METHOD failed with ubus code N: TEXT"
//   followed by the JS stack frames L.raise() appends; without `reject` a
//   ubus error resolves to the `expect` default. LuCI's ubus endpoint
//   (luci-base ucode controller admin/index.uc ubus_request) answers a call
//   the session's ACL does not grant with JSON-RPC error -32002 "Access
//   denied", which rpc.js rejects with whatever `reject` says.
// * ui.js Select shows its first choice (the empty one when optional) for a
//   value it does not offer; DynamicList validates only the text being added,
//   never the items it was given.

const assert = require('assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');

// E(tag, [attrs], [children]) as LuCI's dom builder, into plain objects.
function E(tag, attrs, children) {
	if (Array.isArray(attrs) || typeof attrs === 'string' || (attrs && attrs.tag)) {
		children = attrs;
		attrs = {};
	}
	if (Array.isArray(tag)) {
		children = tag;
		tag = 'fragment';
	}
	const kids = [];
	(function add(c) {
		if (c == null) return;
		if (Array.isArray(c)) c.forEach(add);
		else kids.push(c);
	})(children);
	return { tag, attrs: attrs || {}, children: kids };
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

function hasClass(node, cls) {
	return !!node && typeof node === 'object' && ((node.attrs || {})['class'] || '').split(/\s+/).indexOf(cls) >= 0;
}

// ------------------------------------------------------------------ rpc

// rpc.js getStatusText.
const UBUS_STATUS = {
	1: 'Invalid command', 2: 'Invalid argument', 3: 'Method not found',
	4: 'Resource not found', 5: 'No data received', 6: 'Permission denied',
	7: 'Request timeout', 8: 'Not supported', 9: 'Unspecified error',
	10: 'Connection lost'
};

// The session id LuCI's endpoint adds to every call (ubus_rpc_session).
const SESSION = '0123456789abcdef0123456789abcdef';

// The reply of LuCI's ubus endpoint for a call the session may not make.
const ACCESS_DENIED = { jsonrpcError: { code: -32002, message: 'Access denied' } };

// A call to an object that is not on ubus (pathosd stopped, disabled,
// crashed), as each endpoint answers it: LuCI's own (admin/ubus) with ubus
// status 4, uhttpd's (/ubus, used by rpc.js wherever uhttpd-mod-ubus is
// installed, as on a default OpenWrt) with the JSON-RPC error -32000, before
// it checks the session's ACL.
const NOT_ON_UBUS = [
	{ ubusStatus: 4 },
	{ jsonrpcError: { code: -32000, message: 'Object not found' } }
];

// luci.js L.raise(): the message gets the JS stack frames appended, one per
// line ("  at FUNCTION (URL:LINE:COL)"); in a browser the first is rpc.js's
// handleCallReply. Views must not show this text as it is.
function raise(message) {
	const e = new Error(message +
		'\n  at ClassConstructor.handleCallReply (http://192.168.1.1/luci-static/resources/rpc.js?v=26.001.00000~0000000:157:17)' +
		'\n  at http://192.168.1.1/luci-static/resources/rpc.js?v=26.001.00000~0000000:117:60');
	e.name = 'RPCError';
	return e;
}

function kind(v) {
	return Array.isArray(v) ? 'array' : (v === null ? 'null' : typeof v);
}

// luci-base's own role (modules/luci-base/root/usr/share/rpcd/acl.d/
// luci-base.json), which every login that sees a LuCI page has
// (docs/openwrt.md): the ubus uci calls of uci.js, e.g. `uci get`.
const LUCI_BASE_ACL = {
	'luci-base': {
		read: { ubus: { file: [ 'list' ], uci: [ 'changes', 'get' ] } },
		write: { ubus: { file: [ 'remove' ], uci: [ 'add', 'apply', 'confirm', 'delete', 'order', 'rename', 'set' ] } }
	}
};

// replies[object.method]: the reply; { ubusStatus: N } for a ubus error
// status; { jsonrpcError: { code, message } } for an error of the JSON-RPC
// layer (ACCESS_DENIED); an Error for a failed HTTP request; or a function of
// the arguments returning one of those.
//
// opts.acl (an acl.d object) and opts.role ('read' or 'write') make the calls
// go through rpcd's session check: a role gets what `read` grants, `write`
// adds what `write` grants; anything else is ACCESS_DENIED, as on a router.
function makeRpc(replies, opts) {
	opts = opts || {};
	const declared = [];
	const calls = [];
	const acl = opts.acl ? Object.assign({}, LUCI_BASE_ACL, opts.acl) : null;
	function granted(object, method) {
		if (!acl) return true;
		const roles = opts.role === 'read' ? [ 'read' ] : [ 'read', 'write' ];
		return Object.keys(acl).some((name) => roles.some((r) => {
			const g = ((acl[name][r] || {}).ubus || {})[object] || [];
			return g.indexOf(method) >= 0 || g.indexOf('*') >= 0;
		}));
	}
	return {
		declared,
		calls,
		replies,
		// rpc.declare(): positional arguments become the named `params`.
		declare(o) {
			declared.push({ object: o.object, method: o.method, reject: !!o.reject, params: (o.params || []).slice() });
			return function() {
				const args = {};
				(o.params || []).forEach((p, i) => { args[p] = arguments[i]; });
				// What rpc.js sends: JSON, where undefined members vanish.
				const sent = JSON.parse(JSON.stringify(args));
				calls.push({ object: o.object, method: o.method, args: sent });
				// The request as luci.js sends it (a batch, in UTF-8).
				// uhttpd's endpoint (/ubus, rpc.js's choice wherever
				// uhttpd-mod-ubus is installed) answers a body over 64 KiB
				// (UH_UBUS_MAX_POST_SIZE) with one JSON-RPC parse error,
				// LuCI's own (admin/ubus, http.uc HTTP_MAX_CONTENT) fails
				// over 100 kB; either way luci.js then rejects the batch's
				// calls with "No related RPC reply".
				const body = JSON.stringify([ { jsonrpc: '2.0', id: 1, method: 'call', params: [ SESSION, o.object, o.method, sent ] } ]);
				if (Buffer.byteLength(body) > 65536) return Promise.reject(new Error('No related RPC reply'));
				// uhttpd asks rpcd's session object before every call
				// (uh_ubus_allowed): with rpcd gone every call is refused.
				let r = (opts.rpcd && opts.rpcd.dead) ? ACCESS_DENIED
					: granted(o.object, o.method) ? replies[o.object + '.' + o.method] : ACCESS_DENIED;
				// What the ubus object gets: LuCI's endpoint (ubus_request)
				// adds the caller's session to every call's arguments.
				if (typeof r === 'function') {
					try { r = r(Object.assign({}, sent, { ubus_rpc_session: SESSION })); }
					catch (e) { return Promise.reject(e); }
				}
				// parseCallReply: a failed request rejects with its error.
				if (r instanceof Error) return Promise.reject(r);
				// handleCallReply: a JSON-RPC error always rejects.
				if (r && typeof r === 'object' && r.jsonrpcError)
					return Promise.reject(raise('RPC call to ' + o.object + '/' + o.method + ' failed with error ' +
						r.jsonrpcError.code + ': ' + r.jsonrpcError.message));
				let ret = r;
				if (r && typeof r === 'object' && r.ubusStatus != null) {
					if (o.reject)
						return Promise.reject(raise('RPC call to ' + o.object + '/' + o.method +
							' failed with ubus code ' + r.ubusStatus + ': ' + UBUS_STATUS[r.ubusStatus]));
					// The reply is [ code ]: the bare number goes on, and
					// `expect` replaces it (a number is no object).
					ret = r.ubusStatus;
				}
				if (o.expect) {
					for (const k in o.expect) {
						if (ret != null && k !== '') ret = ret[k];
						if (ret == null || kind(ret) !== kind(o.expect[k]))
							ret = JSON.parse(JSON.stringify(o.expect[k]));
						break;
					}
				}
				return Promise.resolve(ret == null ? ret : JSON.parse(JSON.stringify(ret)));
			};
		}
	};
}

// ------------------------------------------------------------------ uci

const clone = (v) => JSON.parse(JSON.stringify(v));

// ubusd's limit on one message (ubusmsg.h UBUS_MAX_MSGLEN): a reply over it
// is not delivered, ubusd drops the connection, and rpcd exits.
const UBUS_MAX_MSGLEN = 1048576;

// libubox blobmsg sizes, as rpcd builds a reply: per attribute a 4-byte
// header, then (named) a 2-byte name length, the name and a NUL padded to 4,
// then the value padded to 4.
const pad4 = (n) => Math.ceil(n / 4) * 4;
const blobStr = (name, value) => 4 + pad4(3 + Buffer.byteLength(name)) + pad4(Buffer.byteLength(value) + 1);

// The rpcd side: /etc/config/pathosd with uci's staged changes applied (what
// `ubus call uci get {"config":"pathosd"}` returns), and the list of calls
// that staged something, as [ 'add', type, name ], [ 'set', sid, opt, val ],
// [ 'unset', sid, opt ], [ 'remove', sid ]. `pending` counts the changes
// staged since the last apply (rpcd's /var/run/rpcd/uci-SESSION/pathosd).
// A reply too large for ubus kills it (`dead`): every later call fails.
function makeRpcd(sections) {
	const store = sections.map((s) => Object.assign({ '.anonymous': false }, clone(s)));
	const log = [];
	let nextCfg = 0x0a1b2c;
	const find = (sid) => store.find((s) => s['.name'] === sid);
	const rpcd = {
		store, log, pending: 0, dead: null,
		// The bytes of rpcd's reply to uci get of the whole package (uci.c
		// rpc_uci_dump_package: a table "values", per section a table with
		// .anonymous (u8), .type, .name, .index (u32), then the options,
		// a list as an array of unnamed strings).
		replyBytes() {
			let b = 4 + 4 + pad4(3 + 6);
			store.forEach((s) => {
				b += 4 + pad4(3 + s['.name'].length) + (4 + pad4(3 + 10) + 4) + blobStr('.type', s['.type']) +
					blobStr('.name', s['.name']) + (4 + pad4(3 + 6) + 4);
				Object.keys(s).filter((k) => k.charAt(0) !== '.').forEach((k) => {
					if (!Array.isArray(s[k])) { b += blobStr(k, s[k]); return; }
					b += 4 + pad4(3 + k.length);
					s[k].forEach((v) => { b += blobStr('', v); });
				});
			});
			return b;
		},
		alive() {
			if (rpcd.dead) throw new Error('rpcd is not running (' + rpcd.dead + ')');
		},
		// uci get: { name: { '.type', '.name', '.anonymous', '.index', opt... } }
		get() {
			rpcd.alive();
			const size = rpcd.replyBytes();
			if (size > UBUS_MAX_MSGLEN) {
				rpcd.dead = 'its reply to uci get of ' + size + ' bytes was over ubus\'s 1 MiB; it exited';
				rpcd.alive();
			}
			const values = {};
			store.forEach((s, i) => { values[s['.name']] = Object.assign(clone(s), { '.index': i }); });
			return values;
		},
		// uci get with section (and option), or with type: only that.
		getPart(args) {
			rpcd.alive();
			if (args.section == null) {
				const values = {};
				store.forEach((s, i) => {
					if (!args.type || s['.type'] === args.type) values[s['.name']] = Object.assign(clone(s), { '.index': i });
				});
				return { values };
			}
			const s = find(args.section);
			if (!s || (args.option != null && s[args.option] == null)) return { ubusStatus: 4 };
			return args.option != null ? { value: clone(s[args.option]) } : { values: clone(s) };
		},
		// uci export of the package, as libuci writes it (file.c
		// uci_export_package, without naming anonymous sections).
		exportText() {
			const q = (v) => "'" + String(v).replace(/'/g, "'\\''") + "'";
			let out = 'package pathosd\n';
			store.forEach((s) => {
				out += '\nconfig ' + s['.type'] + (s['.anonymous'] ? '' : ' ' + q(s['.name'])) + '\n';
				Object.keys(s).filter((k) => k.charAt(0) !== '.').forEach((k) => {
					[].concat(s[k]).forEach((v) => { out += '\t' + (Array.isArray(s[k]) ? 'list ' : 'option ') + k + ' ' + q(v) + '\n'; });
				});
			});
			return out + '\n';
		},
		// uci apply: the staged changes committed (rpcd keeps none).
		apply() { rpcd.pending = 0; },
		// uci add: a name that exists already is libuci's uci_set() of that
		// section: the old section stays and gets the new values.
		add(type, name, values) {
			let sid = name;
			if (!sid) {
				sid = 'cfg' + (nextCfg++).toString(16).padStart(6, '0');
				store.push({ '.type': type, '.name': sid, '.anonymous': true });
			}
			else if (!find(sid)) {
				store.push({ '.type': type, '.name': sid, '.anonymous': false });
			}
			log.push([ 'add', type, sid ]);
			rpcd.pending++;
			this.set(sid, values || {});
			return sid;
		},
		set(sid, values) {
			const s = find(sid);
			if (!s) return;
			Object.keys(values).forEach((k) => {
				const v = values[k];
				if (v == null || v === '') { this.unset(sid, [ k ]); return; }
				s[k] = Array.isArray(v) ? v.map(String) : String(v);
				log.push([ 'set', sid, k, clone(s[k]) ]);
				rpcd.pending++;
			});
		},
		unset(sid, opts) {
			const s = find(sid);
			if (!s) return;
			opts.forEach((k) => {
				if (!(k in s)) return;
				delete s[k];
				log.push([ 'unset', sid, k ]);
				rpcd.pending++;
			});
		},
		remove(sid) {
			const i = store.findIndex((s) => s['.name'] === sid);
			if (i < 0) return;
			store.splice(i, 1);
			log.push([ 'remove', sid ]);
			rpcd.pending++;
		}
	};
	return rpcd;
}

// uci.js over one config: the loaded values, and the creates, changes and
// deletes not yet saved, with uci.js's rules (see each function).
function makeUci(sections) {
	const rpcd = makeRpcd(sections);
	const state = { values: {}, creates: {}, changes: {}, deletes: {}, newidx: 0 };
	const loaded = [];
	let sidCounter = 0x73483d;
	const uci = {
		rpcd,
		// What the page has staged through rpcd so far (uci changes).
		changes: rpcd.log,
		loaded,
		state,
		// uci.js load(): once per config until unload(), each through rpcd's
		// uci get of the whole package, which fails when rpcd does.
		load(conf) {
			try {
				[].concat(conf).forEach((c) => {
					loaded.push(c);
					if (!state.values[c]) state.values[c] = rpcd.get();
				});
			}
			catch (e) {
				return Promise.reject(e);
			}
			return Promise.resolve([].concat(conf));
		},
		unload(conf) {
			[].concat(conf).forEach((c) => {
				delete state.values[c]; delete state.creates[c];
				delete state.changes[c]; delete state.deletes[c];
			});
		},
		// uci.js createSID(): "new" and six hex digits.
		createSID() { return 'new' + (sidCounter++).toString(16).padStart(6, '0'); },
		// uci.js add(): keyed by the name, whether or not one exists.
		add(conf, type, name) {
			const n = state.creates;
			const sid = name || uci.createSID(conf);
			n[conf] = n[conf] || {};
			n[conf][sid] = { '.type': type, '.name': sid, '.create': name, '.anonymous': !name, '.index': 1000 + state.newidx++ };
			return sid;
		},
		// uci.js remove(): a created section is forgotten; an existing one
		// is deleted, dropping its pending changes.
		remove(conf, sid) {
			const v = state.values, n = state.creates, c = state.changes, d = state.deletes;
			if (n[conf] && n[conf][sid]) {
				delete n[conf][sid];
			}
			else if (v[conf] && v[conf][sid]) {
				if (c[conf]) delete c[conf][sid];
				d[conf] = d[conf] || {};
				d[conf][sid] = true;
			}
		},
		// uci.js sections(): loaded values (minus deleted, plus changes), then
		// the created ones, by '.index', renumbered.
		sections(conf, type, cb) {
			const v = state.values[conf], n = state.creates[conf], c = state.changes[conf], d = state.deletes[conf];
			const sa = [];
			if (!v) return sa;
			for (const s in v)
				if (!d || d[s] !== true)
					if (!type || v[s]['.type'] == type)
						sa.push(Object.assign({}, v[s], c ? c[s] : null));
			if (n)
				for (const s in n)
					if (!type || n[s]['.type'] == type)
						sa.push(Object.assign({}, n[s]));
			sa.sort((a, b) => a['.index'] - b['.index']);
			sa.forEach((s, i) => { s['.index'] = i; });
			if (typeof cb === 'function') sa.forEach((s) => cb.call(uci, s, s['.name']));
			return sa;
		},
		// uci.js get(): a created section first; an option deleted, changed
		// or as loaded; a whole section with changes merged (in place).
		get(conf, sid, opt) {
			const v = state.values, n = state.creates, c = state.changes, d = state.deletes;
			if (sid == null) return null;
			if (n[conf] && n[conf][sid]) return opt == null ? n[conf][sid] : n[conf][sid][opt];
			if (opt != null) {
				if (d[conf] && d[conf][sid] && (d[conf][sid] === true || d[conf][sid][opt])) return null;
				if (c[conf] && c[conf][sid] && c[conf][sid][opt] != null) return c[conf][sid][opt];
				if (v[conf] && v[conf][sid]) return v[conf][sid][opt];
				return null;
			}
			if (v[conf]) {
				if (d[conf] && d[conf][sid] === true) return null;
				const s = v[conf][sid] || null;
				if (s) {
					if (c[conf] && c[conf][sid]) for (const o in c[conf][sid]) if (c[conf][sid][o] != null) s[o] = c[conf][sid][o];
					if (d[conf] && d[conf][sid]) for (const o in d[conf][sid]) delete s[o];
				}
				return s;
			}
			return null;
		},
		// uci.js set(): into a created section as given; in a loaded one a
		// value is staged even when it equals the current one; null or ''
		// deletes, but only an option the loaded section has.
		set(conf, sid, opt, val) {
			const v = state.values, n = state.creates, c = state.changes, d = state.deletes;
			if (sid == null || opt == null || opt.charAt(0) == '.') return;
			if (n[conf] && n[conf][sid]) {
				if (val != null) n[conf][sid][opt] = val;
				else delete n[conf][sid][opt];
			}
			else if (val != null && val !== '') {
				if (d[conf] && d[conf][sid] === true) return;
				if (!v[conf] || !v[conf][sid]) return;
				c[conf] = c[conf] || {};
				c[conf][sid] = c[conf][sid] || {};
				if (d[conf] && d[conf][sid]) {
					delete d[conf][sid][opt];
					if (!Object.keys(d[conf][sid]).length) delete d[conf][sid];
				}
				c[conf][sid][opt] = val;
			}
			else {
				if (c[conf] && c[conf][sid]) delete c[conf][sid][opt];
				if (v[conf] && v[conf][sid] && Object.prototype.hasOwnProperty.call(v[conf][sid], opt)) {
					d[conf] = d[conf] || {};
					d[conf][sid] = d[conf][sid] || {};
					if (d[conf][sid] !== true) d[conf][sid][opt] = true;
				}
			}
		},
		unset(conf, sid, opt) { return uci.set(conf, sid, opt, null); },
		// uci.js save(): deletes, then adds (with their values), then sets;
		// then unload and load again, i.e. read back what rpcd staged.
		save() {
			const n = state.creates, c = state.changes, d = state.deletes;
			const pkgs = {};
			for (const conf in d) {
				for (const sid in d[conf]) {
					const o = d[conf][sid];
					if (o === true) rpcd.remove(sid);
					else rpcd.unset(sid, Object.keys(o));
				}
				pkgs[conf] = true;
			}
			for (const conf in n) {
				for (const sid in n[conf]) {
					const values = {};
					let type = null, name = null;
					for (const k in n[conf][sid]) {
						if (k === '.type') type = n[conf][sid][k];
						else if (k === '.create') name = n[conf][sid][k];
						else if (k.charAt(0) !== '.') values[k] = n[conf][sid][k];
					}
					rpcd.add(type, name, values);
				}
				pkgs[conf] = true;
			}
			for (const conf in c) {
				for (const sid in c[conf]) rpcd.set(sid, c[conf][sid]);
				pkgs[conf] = true;
			}
			const confs = Object.keys(pkgs);
			uci.unload(confs);
			return uci.load(confs);
		}
	};
	return uci;
}

// ------------------------------------------------- rpcd's exec plugin

// pathosd's rpcd plugin (files/pathosd-staged.rpcd, ubus object
// pathosd-staged), run as rpcd runs it (rpcd plugin.c rpc_plugin_call: the
// call's arguments as JSON on standard input, `call METHOD`; the answer is
// the JSON object on standard output, nothing is NO_DATA, anything else
// INVALID_ARGUMENT) by busybox ash, with the real pathosd (PATHOSD_BIN, else
// target/debug/pathosd) and the uci stand-in (tests/packaging/shim/uci)
// exporting what this rpcd has staged; /var/run/rpcd/uci-SESSION/pathosd
// has content while changes are pending. Answers are cached per staged
// configuration: many tests render the same one.
const ROOT = path.resolve(__dirname, '..', '..', '..');
const PLUGIN = path.join(ROOT, 'files/pathosd-staged.rpcd');
let pluginDir = null;
const pluginAnswers = new Map();

function pluginSetup() {
	if (pluginDir) return pluginDir;
	const bin = process.env.PATHOSD_BIN || path.join(ROOT, 'target/debug/pathosd');
	if (!fs.existsSync(bin)) throw new Error('no pathosd binary at ' + bin + ' (cargo build, or PATHOSD_BIN)');
	pluginDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pathosd-luci-rpcd.'));
	process.on('exit', () => fs.rmSync(pluginDir, { recursive: true, force: true }));
	fs.mkdirSync(path.join(pluginDir, 'bin'));
	fs.mkdirSync(path.join(pluginDir, 'uci'));
	fs.copyFileSync(path.join(__dirname, 'uci'), path.join(pluginDir, 'bin/uci'));
	fs.chmodSync(path.join(pluginDir, 'bin/uci'), 0o755);
	fs.symlinkSync(path.resolve(bin), path.join(pluginDir, 'bin/pathosd'));
	return pluginDir;
}

function runPlugin(rpcd, method, args) {
	rpcd.alive();
	const dir = pluginSetup();
	const input = JSON.stringify(args);
	const exported = rpcd.exportText();
	const key = [ method, input, rpcd.pending > 0, exported ].join('\0');
	if (pluginAnswers.has(key)) return clone(pluginAnswers.get(key));
	const sid = String(args.ubus_rpc_session || '');
	const session = path.join(dir, 'rpcd', 'uci-' + sid.replace(/[^0-9a-f]/g, ''));
	fs.mkdirSync(session, { recursive: true });
	if (rpcd.pending > 0) fs.writeFileSync(path.join(session, 'pathosd'), "pathosd.main.enabled='1'\n");
	else fs.rmSync(path.join(session, 'pathosd'), { force: true });
	fs.writeFileSync(path.join(dir, 'export'), exported);
	const r = spawnSync('busybox', [ 'sh', PLUGIN, 'call', method ], {
		input, encoding: 'utf8', timeout: 60000,
		env: { PATH: path.join(dir, 'bin') + ':/usr/bin:/bin', PATHOSD_RPCD_SAVEDIR: path.join(dir, 'rpcd', 'uci-'),
			PATHOSD_UCI_SAVEDIR: path.join(dir, 'uci'), STANDIN_UCI_EXPORT: path.join(dir, 'export') }
	});
	if (r.error) throw r.error;
	let answer;
	if (!r.stdout.trim()) answer = { ubusStatus: 5 };
	else {
		try { answer = JSON.parse(r.stdout); } catch (e) { answer = null; }
		if (!answer || typeof answer !== 'object' || Array.isArray(answer)) answer = { ubusStatus: 2 };
	}
	pluginAnswers.set(key, answer);
	return clone(answer);
}

// ------------------------------------------------------------------ ui

function makeUi(onApply) {
	const ui = {
		notes: [],
		applied: [],
		modal: null,
		modals: [],
		// ui.addNotification(title, children, ...classes)
		addNotification(title, body, cls) {
			const n = { text: text(title) + text(body), cls, node: E('div', body) };
			ui.notes.push(n);
			return n;
		},
		// ui.showModal(title, children, ...classes): one dialog at a time.
		showModal(title, children, cls) {
			ui.modal = { title, children: [].concat(children || []), cls };
			ui.modals.push(ui.modal);
			return ui.modal;
		},
		hideModal() { ui.modal = null; },
		changes: {
			// ui.js changes.apply(): the request to admin/uci/apply_rollback
			// (or apply_unchecked), i.e. rpcd's uci apply, recorded.
			apply(checked) {
				ui.applied.push(checked);
				if (onApply) onApply();
				return Promise.resolve();
			},
			// ui.js changes.displayChanges(): the header's "Unsaved Changes"
			// dialog, whose Save & Apply calls this.apply(mode == '0') on
			// this object when clicked.
			displayChanges() {
				return ui.showModal('Configuration / Changes', [
					E('button', { 'class': 'btn cbi-button cbi-button-positive important', 'click': () => this.apply(true) }, [ 'Save & Apply' ]),
					E('button', { 'class': 'btn cbi-button', 'click': ui.hideModal }, [ 'Close' ])
				]);
			}
		},
		createHandlerFn(ctx, fn) {
			const bound = Array.prototype.slice.call(arguments, 2);
			return function(ev) {
				const f = typeof fn === 'function' ? fn : ctx[fn];
				return f.apply(ctx, bound.concat([ ev ]));
			};
		}
	};
	return ui;
}

// ----------------------------------------------------------- validation

// A subset of validation.js's datatypes: the ones the views use. Unknown
// types pass (they are not checked here, only on a router).
function ip4(v) {
	const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(v);
	return !!m && m.slice(1).every((x) => +x <= 255);
}
function ip6(v) {
	if (!/^[0-9a-fA-F:.]+$/.test(v) || v.indexOf(':') < 0) return false;
	const dbl = v.split('::');
	if (dbl.length > 2) return false;
	const groups = (p) => (p === '' ? [] : p.split(':'));
	let parts = groups(dbl[0]).concat(dbl.length === 2 ? groups(dbl[1]) : []);
	let n = parts.length;
	if (parts.length && parts[parts.length - 1].indexOf('.') >= 0) {
		if (!ip4(parts[parts.length - 1])) return false;
		n++;
		parts = parts.slice(0, -1);
	}
	if (!parts.every((g) => /^[0-9a-fA-F]{1,4}$/.test(g))) return false;
	return dbl.length === 2 ? n < 8 : n === 8;
}
function cidr(v, check, max) {
	const m = /^(.+)\/(\d+)$/.exec(v);
	return !!m && check(m[1]) && +m[2] <= max;
}
const hostname = (v) => v.length <= 253 && /^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/.test(v);
function datatypeOk(type, v) {
	let m;
	if (!type || type === 'string') return true;
	if ((m = /^range\((-?[\d.]+),(-?[\d.]+)\)$/.exec(type))) return /^-?\d+(\.\d+)?$/.test(v) && +v >= +m[1] && +v <= +m[2];
	if ((m = /^min\((-?[\d.]+)\)$/.exec(type))) return /^-?\d+(\.\d+)?$/.test(v) && +v >= +m[1];
	switch (type) {
	case 'port': return /^\d+$/.test(v) && +v <= 65535;
	case 'uinteger': return /^\d+$/.test(v);
	case 'integer': return /^-?\d+$/.test(v);
	case 'ip4addr': return ip4(v) || cidr(v, ip4, 32);
	case 'ip6addr': return ip6(v) || cidr(v, ip6, 128);
	case 'ipaddr': return datatypeOk('ip4addr', v) || datatypeOk('ip6addr', v);
	case 'cidr': return cidr(v, ip4, 32) || cidr(v, ip6, 128);
	case 'hostname': return hostname(v);
	case 'host': return hostname(v) || datatypeOk('ipaddr', v);
	case 'uciname': return /^[A-Za-z0-9_]+$/.test(v);
	default: return true;
	}
}

// validation.js Validator.validate(): an empty value must be optional, a
// non-empty one must match the datatype; then the option's validate()
// function runs, for the empty value too. true or the error text.
function validateValue(value, datatype, optional, vfunc) {
	value = value == null ? '' : String(value);
	if (value === '') {
		if (!optional) return 'Expecting: non-empty value';
	}
	else if (!datatypeOk(datatype, value)) {
		return 'Expecting: ' + datatype;
	}
	if (typeof vfunc === 'function') {
		const r = vfunc(value);
		if (r !== true) return typeof r === 'string' ? r : 'Invalid value';
	}
	return true;
}

// ----------------------------------------------------------------- form

const L_toArray = (v) => (v == null ? [] : [].concat(v));

// form.js isEqual: strings, arrays, objects, RegExp patterns, null.
function isEqual(x, y) {
	if (y instanceof RegExp) return x == null ? false : y.test(x);
	if (x != null && y != null && typeof x !== typeof y) return false;
	if ((x == null) !== (y == null)) return false;
	if (Array.isArray(x)) return x.length === y.length && x.every((v, i) => isEqual(v, y[i]));
	if (x !== null && typeof x === 'object') {
		return Object.keys(x).every((k) => isEqual(x[k], y[k])) && Object.keys(y).every((k) => k in x);
	}
	return x == y;
}

function isContained(x, y) {
	if (Array.isArray(x)) return x.some((v) => v == y);
	if (x && typeof x === 'object') return x[y] != null;
	if (typeof x === 'string') return x.indexOf(y) > -1;
	return false;
}

function makeForm(uci, ui) {
	const pageMaps = [];

	class Map {
		constructor(config, title, description) {
			this.config = config;
			this.title = title || '';
			this.description = description || '';
			this.children = [];
			this.data = uci;
			this.widgets = {};
			this.errors = [];
		}

		section(cls) {
			const s = new cls(this, ...Array.prototype.slice.call(arguments, 1));
			this.children.push(s);
			return s;
		}

		// form.js Map.load(): the config, then every option's load().
		load() {
			return Promise.resolve(this.data.load(this.config))
				.then(() => Promise.all(this.children.map((s) => s.load())));
		}

		render() {
			return this.load().then(() => this.renderContents());
		}

		// form.js Map.renderContents(): every widget made afresh from
		// cfgvalue() (or the default), then checkDepends(), which validates
		// every active widget (AbstractSection.checkDepends ->
		// triggerValidation): an invalid value loaded from the file is
		// flagged at once, in fields and selects (not in DynamicLists).
		renderContents() {
			this.widgets = {};
			return Promise.all(this.children.map((s) => s.render())).then((nodes) => {
				if (!this.parent && pageMaps.indexOf(this) < 0) pageMaps.push(this);
				this.node = this.node || { tag: 'div', attrs: { 'class': 'cbi-map' }, children: [], map: this };
				this.node.children = nodes;
				this.checkDepends();
				return this.node;
			});
		}

		reset() { return this.renderContents(); }

		// form.js Map.checkDepends(): every section's checkDepends().
		checkDepends() {
			this.children.forEach((s) => s.checkDepends());
		}

		// form.js Map.lookupOption(): an option rendered in this map. In a
		// browser each lookup is a querySelector over the whole map
		// (findElement), counted in `lookups`: a grid of 1,000 rows makes
		// that minutes.
		lookupOption(name, sid) {
			this.lookups = (this.lookups || 0) + 1;
			for (const s of this.children) {
				if (s.cfgsections().indexOf(sid) < 0) continue;
				const o = s.widgetOptions().find((x) => x.option === name);
				if (o && o.widget(sid)) return [ o, sid ];
			}
			return null;
		}

		// form.js Map.isDependencySatisfied() with !reverse, !contains and
		// !default.
		isDependencySatisfied(deps, sid) {
			let def = false;
			if (!deps.length) return true;
			for (const d of deps) {
				let istat = true;
				for (const k in d) {
					if (k === '!reverse' || k === '!contains') continue;
					if (k === '!default') { def = true; istat = false; continue; }
					const res = this.lookupOption(k, sid);
					const val = (res && res[0].isActive(res[1])) ? res[0].formvalue(res[1]) : null;
					istat = istat && (d['!contains'] ? isContained(val, d[k]) : isEqual(val, d[k]));
				}
				if (istat ^ !!d['!reverse']) return true;
			}
			return def;
		}

		parse() {
			return Promise.all(this.children.map((s) => s.parse()));
		}

		// form.js Map.save(cb, silent): validate, parse (an invalid value
		// rejects; unless silent, a "Save error" dialog shows the message),
		// uci.save(), load, render again (only when it worked).
		save(cb, silent) {
			this.errors = [];
			this.checkDepends();
			return this.parse()
				.then(cb)
				.then(() => this.data.save())
				.then(() => this.load())
				.catch((e) => {
					this.errors.push(String(e && e.message || e));
					if (!silent)
						ui.showModal('Save error', [ E('p', [ 'An error occurred while saving the form:' ]), E('p', [ E('em', [ e.message ]) ]) ]);
					return Promise.reject(e);
				})
				.then(() => this.renderContents());
		}
	}

	class AbstractSection {
		constructor(map, sectiontype, title, description) {
			this.map = map;
			this.config = map.config;
			this.sectiontype = sectiontype;
			this.title = title || '';
			this.description = description || '';
			this.children = [];
			this.optional = true;
			this.addremove = false;
		}

		filter() { return true; }

		tab(name, title) {
			if (this.tabs && this.tabs[name]) throw new Error('Tab already declared');
			this.tabs = this.tabs || [];
			const entry = { name, title, children: [] };
			this.tabs.push(entry);
			this.tabs[name] = entry;
			this.tab_names = this.tab_names || [];
			this.tab_names.push(name);
		}

		option(cls, name, title, description) {
			const o = new cls(this.map, this, name, title, description);
			this.children.push(o);
			return o;
		}

		taboption(tab, cls, name, title, description) {
			if (!this.tabs || !this.tabs[tab]) throw new Error('Associated tab not declared: ' + tab);
			const o = this.option(cls, name, title, description);
			o.tab = tab;
			this.tabs[tab].children.push(o);
			return o;
		}

		getOption(name) { return this.children.find((o) => o.option === name) || null; }

		// form.js AbstractSection.formvalue(): the widget's value once the
		// map is rendered.
		formvalue(sid, name) {
			const o = this.getOption(name);
			return o ? o.formvalue(sid) : null;
		}

		cfgvalue(sid, name) {
			const o = this.getOption(name);
			return o ? o.cfgvalue(sid) : null;
		}

		load() {
			return Promise.all(this.cfgsections().map((sid) =>
				Promise.all(this.children.map((o) => o.load(sid))).then((vals) => {
					vals.forEach((v, i) => this.children[i].cfgvalue(sid, v));
				})));
		}

		widgetOptions() { return this.children; }

		// form.js AbstractSection.checkDepends(): for every section id and
		// every option (shown in the page or not), isActive() and
		// checkDepends() look it up, and an active one is validated.
		checkDepends(ev, n) {
			this.cfgsections().forEach((sid) => this.children.forEach((o) => {
				const active = o.isActive(sid);
				o.checkDepends(sid);
				if (!n && active) o.triggerValidation(sid);
			}));
			return false;
		}

		// form.js AbstractSection/TypedSection render(): the section's node.
		render() {
			return Promise.resolve(this.renderAll());
		}

		renderAll() {
			const nodes = [];
			this.cfgsections().forEach((sid) => this.widgetOptions().forEach((o, i) => {
				nodes.push(o.renderWidget(sid, i, o.cfgvalue(sid)));
			}));
			return E('div', { 'class': 'cbi-section' }, nodes);
		}

		parse() {
			const tasks = [];
			this.cfgsections().forEach((sid) => this.widgetOptions().forEach((o) => tasks.push(o.parse(sid))));
			return Promise.all(tasks);
		}
	}

	class NamedSection extends AbstractSection {
		constructor(map, sid, sectiontype, title, description) {
			super(map, sectiontype, title, description);
			this.section = sid;
		}
		cfgsections() { return [ this.section ]; }
	}

	class TypedSection extends AbstractSection {
		cfgsections() {
			return this.map.data.sections(this.config, this.sectiontype).map((s) => s['.name']).filter((sid) => this.filter(sid));
		}

		// form.js TypedSection.handleRemove(): remove, then save the map.
		handleRemove(sid) {
			this.map.data.remove(this.config, sid);
			return this.map.save(null, true);
		}
	}

	class TableSection extends TypedSection {
		tab() { throw new Error('Tabs are not supported by TableSection'); }
	}

	class GridSection extends TableSection {
		tab(name, title) { AbstractSection.prototype.tab.call(this, name, title); }

		// The grid shows text, not widgets; nothing of it is parsed.
		widgetOptions() { return []; }

		titleFn(attr, sid) {
			const v = typeof this[attr] === 'function' ? this[attr](sid) : this[attr];
			return (v == null || v === '') ? null : String(v);
		}

		// What the grid shows: per row the title (anonymous sections only
		// with a sectiontitle) and the text of every non-modalonly option.
		rows() {
			return this.cfgsections().map((sid) => {
				let title = this.titleFn('sectiontitle', sid);
				if (title == null) title = sid;
				return {
					sid,
					title: (!this.anonymous || this.sectiontitle) ? title : null,
					cells: this.children.filter((o) => !o.modalonly).map((o) => {
						const v = o.textvalue(sid);
						return { option: o.option, title: o.title, text: v == null ? 'none' : text(v) };
					})
				};
			});
		}

		// form.js GridSection.handleAdd(): uci.add(), remembered on the map
		// as addedSection, and the dialog opened on it.
		handleAdd(ev, name) {
			const sid = this.map.data.add(this.config, this.sectiontype, name);
			this.map.addedSection = sid;
			return this.renderMoreOptionsModal(sid);
		}

		// form.js TableSection.cloneOptions(): a new instance of each
		// option's class, with every own property copied (functions and the
		// cfgvalue cache included).
		cloneOptions(src, dest) {
			src.children.forEach((o1) => {
				if (o1.modalonly === false && src === this) return;
				const o2 = dest.option(o1.constructor, o1.option, o1.title, o1.description);
				Object.keys(o1).forEach((k) => {
					if ([ 'map', 'section', 'option', 'title', 'description', 'subsection' ].indexOf(k) < 0) o2[k] = o1[k];
				});
			});
		}

		addModalOptions() {}

		// form.js TableSection.renderMoreOptionsModal(): a new Map with a
		// NamedSection of the section uci.get() names; its title is
		// modaltitle(), else "MAP TITLE - " + sectiontitle(), else (named
		// sections) "MAP TITLE - " + the section id.
		renderMoreOptionsModal(sid) {
			const parent = this.map;
			const sref = parent.data.get(parent.config, sid);
			sid = sref['.name'];
			const m = new Map(parent.config, null, null);
			const s = m.section(NamedSection, sid, this.sectiontype);
			m.parent = parent;
			m.section = sid;
			s.tabs = this.tabs;
			s.tab_names = this.tab_names;
			this.cloneOptions(this, s);
			return Promise.resolve(this.addModalOptions(s, sid)).then(() => m.render()).then((nodes) => {
				let title = parent.title, name;
				if ((name = this.titleFn('modaltitle', sid)) != null) title = name;
				else if ((name = this.titleFn('sectiontitle', sid)) != null) title = parent.title + ' - ' + name;
				else if (!this.anonymous) title = parent.title + ' - ' + sid;
				ui.showModal(title, [
					nodes,
					E('div', { 'class': 'right' }, [
						E('button', { 'class': 'cbi-button', 'click': ui.createHandlerFn(this, 'handleModalCancel', m) }, [ 'Dismiss' ]),
						E('button', { 'class': 'cbi-button cbi-button-positive important', 'click': ui.createHandlerFn(this, 'handleModalSave', m) }, [ 'Save' ])
					])
				], 'cbi-modal');
				ui.modal.map = m;
				ui.modal.owner = this;
			});
		}

		// form.js TableSection.handleModalSave(): the dialog's map saved
		// silently; the page map loaded and rendered again; the dialog
		// closed. A failed save leaves the dialog open, with no message
		// but the fields marked invalid.
		handleModalSave(m) {
			return m.save(null, true)
				.then(() => this.map.load())
				.then(() => this.map.reset())
				.then(() => this.handleModalCancel(m, null, true))
				.catch(() => {});
		}

		// form.js GridSection.handleModalCancel(): an added section that is
		// not being saved is removed again.
		handleModalCancel(m, ev, isSaving) {
			if (this.map.addedSection != null && !isSaving)
				this.map.data.remove(this.config, this.map.addedSection);
			delete this.map.addedSection;
			ui.hideModal();
			return Promise.resolve();
		}
	}

	class AbstractValue {
		constructor(map, section, option, title, description) {
			this.map = map;
			this.section = section;
			this.option = option;
			this.title = title || '';
			this.description = description || '';
			this.config = map.config;
			this.deps = [];
			this.rmempty = true;
			this.default = null;
			this.optional = false;
			this.retain = false;
		}

		depends(field, value) {
			let d = field;
			if (typeof field === 'string') { d = {}; d[field] = value; }
			this.deps.push(d);
		}

		cbid(sid) { return 'cbid.' + this.config + '.' + sid + '.' + this.option; }

		// form.js AbstractValue.load(): uci.get of ucioption or option.
		load(sid) { return this.map.data.get(this.config, sid, this.ucioption || this.option); }

		cfgvalue(sid, set) {
			if (arguments.length === 2) {
				this.data = this.data || {};
				this.data[sid] = set;
			}
			return this.data ? this.data[sid] : null;
		}

		widget(sid) { return this.map.widgets[this.cbid(sid)] || null; }

		// form.js AbstractValue.getUIElement(): the ui.js widget, whose
		// setValue() puts a value in without validating it.
		getUIElement(sid) { return this.widget(sid); }

		formvalue(sid) {
			const w = this.widget(sid);
			return w ? w.getValue() : null;
		}

		// form.js AbstractValue.textvalue(): the value or the default.
		textvalue(sid) {
			let v = this.cfgvalue(sid);
			if (v == null) v = this.default;
			if (Array.isArray(v)) v = v.join(' ');
			return v != null ? String(v) : null;
		}

		validate() { return true; }

		triggerValidation(sid) {
			const w = this.widget(sid);
			if (w && w.validate) w.validate();
		}

		isValid(sid) {
			const w = this.widget(sid);
			return w ? w.validState !== false : true;
		}

		getValidationError(sid) {
			const w = this.widget(sid);
			return w ? (w.validationError || '') : '';
		}

		// What a user sees next to the field now (null when valid).
		validationError(sid) {
			this.triggerValidation(sid);
			return this.isValid(sid) ? null : this.getValidationError(sid);
		}

		// form.js AbstractValue.isActive(): its field is in the page and
		// not hidden (findElement, counted as a lookup).
		isActive(sid) {
			this.map.lookups = (this.map.lookups || 0) + 1;
			return !!this.widget(sid) && this.map.isDependencySatisfied(this.deps, sid);
		}

		checkDepends(sid) {
			return this.map.isDependencySatisfied(this.deps, sid);
		}

		// form.js AbstractValue.parse() (master): an inactive option is
		// removed (unless retain); an active one that is empty, or equals
		// its default, is removed (unless !rmempty && !optional: an error);
		// else written when it differs from cfgvalue().
		parse(sid) {
			const active = this.isActive(sid);
			if (active && !this.isValid(sid))
				return Promise.reject(new TypeError('Option "' + (this.title || this.option) + '" contains an invalid input value. ' + this.getValidationError(sid)));
			if (active) {
				const cval = this.cfgvalue(sid);
				const fval = this.formvalue(sid);
				if (fval == null || fval == '' || (fval == this.default && (this.optional || this.rmempty))) {
					if (this.rmempty || this.optional) return Promise.resolve(this.remove(sid));
					return Promise.reject(new TypeError('Option "' + (this.title || this.option) + '" must not be empty.'));
				}
				else if (this.forcewrite || !isEqual(cval, fval)) {
					return Promise.resolve(this.write(sid, fval));
				}
			}
			else if (!this.retain) {
				return Promise.resolve(this.remove(sid));
			}
			return Promise.resolve();
		}

		write(sid, v) { return this.map.data.set(this.config, sid, this.ucioption || this.option, v); }

		// form.js AbstractValue.remove(): kept only while another active
		// option with an explicit ucioption aliases the same UCI option; an
		// option without ucioption does not protect it.
		remove(sid) {
			const opt = this.ucioption || this.option;
			for (const sib of this.section.children) {
				if (sib === this || sib.ucioption == null) continue;
				if ((sib.ucioption || sib.option) !== opt) continue;
				if (!sib.isActive(sid)) continue;
				return;
			}
			return this.map.data.unset(this.config, sid, opt);
		}
	}

	// A widget: what the user sees and types. set() is a user's edit (then
	// the field is validated, as on keyup/blur).
	function widgetBase(o, sid, value, vfunc, optional) {
		return {
			option: o,
			value,
			placeholder: o.placeholder,
			choices: (o.keylist || []).slice(),
			labels: (o.vallist || []).slice(),
			validState: undefined,
			validationError: '',
			getValue() { return this.value == null ? '' : String(this.value); },
			setValue(v) { this.value = v; },
			validate() {
				const r = validateValue(this.getValue(), o.datatype, optional, vfunc);
				this.validState = r === true;
				this.validationError = r === true ? '' : r;
				return this.validState;
			},
			set(v) { this.value = v; this.validate(); return this; }
		};
	}

	class Value extends AbstractValue {
		value(key, val) {
			this.keylist = this.keylist || [];
			this.keylist.push(String(key));
			this.vallist = this.vallist || [];
			this.vallist.push(String(val != null ? val : key));
		}

		// form.js Value.renderWidget(): a ui.Textfield (or ui.Combobox with
		// choices) holding the config value, else the default; a list is
		// joined with spaces; the placeholder is whatever it is now.
		renderWidget(sid, index, cfgvalue) {
			let value = cfgvalue != null ? cfgvalue : this.default;
			if (Array.isArray(value)) value = value.join(' ');
			const w = widgetBase(this, sid, value, (v) => this.validate(sid, v), this.optional || this.rmempty);
			this.map.widgets[this.cbid(sid)] = w;
			return E('div', { 'id': this.cbid(sid), 'data-widget': 'Value' });
		}
	}

	class ListValue extends Value {
		// ui.Select: a <select> holds one of its choices; for any other
		// value the browser selects its first option (the empty one when
		// optional). It is optional when the option is, or when it offers
		// '' (Select.__init__). The validator runs on what it shows, so an
		// empty value of a select that is not optional is invalid.
		renderWidget(sid, index, cfgvalue) {
			const n = super.renderWidget(sid, index, cfgvalue);
			const w = this.widget(sid);
			const optional = this.optional || (this.keylist || []).indexOf('') >= 0;
			w.validate = function() {
				const r = validateValue(this.getValue(), null, optional, (v) => w.option.validate(sid, v));
				this.validState = r === true;
				this.validationError = r === true ? '' : r;
				return this.validState;
			};
			w.getValue = function() {
				if (this.value != null && this.choices.indexOf(String(this.value)) >= 0) return String(this.value);
				return optional ? '' : (this.choices.length ? this.choices[0] : '');
			};
			w.set = function(v) {
				assert.ok(this.choices.indexOf(String(v)) >= 0,
					'the select offers ' + JSON.stringify(v) + ' (it offers ' + JSON.stringify(this.choices) + ')');
				this.value = String(v);
				this.validate();
				return this;
			};
			return n;
		}
	}

	class DynamicList extends Value {
		// ui.DynamicList: the items as given (not validated: the validator
		// sits on the text input for a new item, and on the list itself only
		// with an empty value); add() is typing an item and pressing Enter,
		// which the widget refuses while the text is invalid, leaving the
		// text in the input; type() is typing without Enter. The input is
		// the node's `.add-item > input[type="text"]`; getValue() has the
		// items and that text when it is valid, and drops it when not.
		renderWidget(sid, index, cfgvalue) {
			const value = cfgvalue != null ? cfgvalue : this.default;
			const w = widgetBase(this, sid, null, (v) => this.validate(sid, v), true);
			this.map.widgets[this.cbid(sid)] = w;
			w.items = value == null ? [] : [].concat(value).map(String);
			w.text = '';
			const input = {
				get value() { return w.text; },
				classList: { contains: (c) => c === 'cbi-input-invalid' && w.textError() !== null }
			};
			w.node = { querySelector: (sel) => (sel === '.add-item > input[type="text"]' ? input : null) };
			w.textError = function() {
				if (!/\S/.test(this.text)) return null;
				const r = validateValue(this.text, w.option.datatype, true, (v) => w.option.validate(sid, v));
				return r === true ? null : r;
			};
			w.type = function(text) { this.text = String(text); return this.textError(); };
			w.getValue = function() {
				const v = this.items.slice();
				if (/\S/.test(this.text) && this.textError() === null && v.indexOf(this.text) < 0) v.push(this.text);
				return v;
			};
			w.validate = function() {
				const r = validateValue('', null, true, (v) => w.option.validate(sid, v));
				this.validState = r === true;
				this.validationError = r === true ? '' : r;
				return this.validState;
			};
			w.add = function(item) {
				this.text = String(item);
				const r = this.textError();
				if (r !== null) return r;
				if (this.items.indexOf(this.text) < 0) this.items.push(this.text);
				this.text = '';
				return null;
			};
			w.remove = function(item) { this.items = this.items.filter((x) => x !== item); return this; };
			w.set = function(items) { this.items = [].concat(items); return this; };
			w.setValue = function(items) { this.items = L_toArray(items).map(String); };
			return E('div', { 'id': this.cbid(sid), 'data-widget': 'DynamicList' });
		}
	}

	class Flag extends Value {
		constructor(...a) {
			super(...a);
			this.enabled = '1';
			this.disabled = '0';
			this.default = this.disabled;
		}

		// ui.Checkbox: ticked when the value (or default) == enabled, so a
		// file's 'yes' or 'true' shows unticked.
		renderWidget(sid, index, cfgvalue) {
			const n = super.renderWidget(sid, index, cfgvalue);
			const w = this.widget(sid);
			const self = this;
			w.checked = (cfgvalue != null ? cfgvalue : this.default) == this.enabled;
			w.getValue = function() { return this.checked ? self.enabled : self.disabled; };
			w.set = function(v) { this.checked = (v === true || v == self.enabled); return this; };
			w.setValue = function(v) { this.checked = (v == self.enabled); };
			return n;
		}

		formvalue(sid) {
			const w = this.widget(sid);
			return (w && w.checked) ? this.enabled : this.disabled;
		}

		textvalue(sid) {
			let v = this.cfgvalue(sid);
			if (v == null) v = this.default;
			return v == this.enabled ? 'Yes' : 'No';
		}

		// form.js FlagValue.parse(): removed when equal to the default
		// (rmempty), else written on every save, changed or not.
		parse(sid) {
			if (this.isActive(sid)) {
				const fval = this.formvalue(sid);
				if (!this.isValid(sid))
					return Promise.reject(new TypeError('Option "' + (this.title || this.option) + '" contains an invalid input value. ' + this.getValidationError(sid)));
				if (fval == this.default && (this.optional || this.rmempty)) return Promise.resolve(this.remove(sid));
				return Promise.resolve(this.write(sid, fval));
			}
			return this.retain ? Promise.resolve() : Promise.resolve(this.remove(sid));
		}
	}

	class DummyValue extends Value {
		write() {}
		remove() {}
	}

	return {
		pageMaps,
		Map, AbstractSection, NamedSection, TypedSection, TableSection, GridSection,
		AbstractValue, Value, ListValue, DynamicList, Flag, DummyValue,
		MultiValue: DynamicList, Button: DummyValue
	};
}

// ------------------------------------------------------------ the page

// Everything a view gets from LuCI, over one uci store and one rpc.
function makeEnv(opts) {
	const uci = makeUci(opts.uci || []);
	const ui = makeUi(() => uci.rpcd.apply());
	const form = makeForm(uci, ui);
	// rpcd's own objects over this store: uci get (a section, an option or
	// a type; without them the whole package, as uci.js loads it) and uci
	// changes; and pathosd's plugin. A test's replies come first.
	const rpcdReplies = {
		'uci.get': (a) => (a.section == null && a.type == null ? { values: uci.rpcd.get() } : uci.rpcd.getPart(a)),
		'uci.changes': (a) => (uci.rpcd.alive(), { changes: uci.rpcd.pending ? [ [ 'set', 'main', 'enabled', '1' ] ] : [] }),
		'pathosd-staged.validate': (a) => runPlugin(uci.rpcd, 'validate', a),
		'pathosd-staged.size': (a) => runPlugin(uci.rpcd, 'size', a)
	};
	const replies = Object.assign(rpcdReplies, opts.replies || {});
	const rpc = makeRpc(replies, { acl: opts.acl, role: opts.role, rpcd: uci.rpcd });
	const poll = { added: [], add(fn, interval) { this.added.push({ fn, interval }); } };
	const dom = {
		content(node, children) { node.children = children == null ? [] : [].concat(children).filter((c) => c != null); return node; },
		append(node, children) { node.children = node.children.concat(children == null ? [] : [].concat(children)); return node; }
	};
	// luci.js view: handleSave saves every map of the page (not silently),
	// handleSaveApply then applies the staged changes.
	const viewBase = {
		handleSave() { return Promise.all(form.pageMaps.map((m) => m.save())); },
		handleSaveApply(ev, mode) { return this.handleSave(ev).then(() => ui.changes.apply(mode == '0')); },
		handleReset() { return Promise.all(form.pageMaps.map((m) => m.reset())); }
	};
	const L = {
		// luci.js hasViewPermission(): false for a login that has the page's
		// ACL with read access only.
		hasViewPermission() { return opts.role === 'read' ? false : true; },
		resolveDefault(p, d) { return Promise.resolve(p).catch(() => d); },
		toArray(v) { return v == null ? [] : [].concat(v); },
		isObject(v) { return v != null && typeof v === 'object' && !Array.isArray(v); }
	};
	return {
		uci, ui, form, rpc, poll, dom, L,
		view: { extend(o) { return Object.assign(Object.create(viewBase), o); } },
		baseclass: { extend(o) { return o; } }
	};
}

module.exports = { E, text, findAll, hasClass, makeEnv, makeRpc, makeUci, UBUS_STATUS, ACCESS_DENIED, NOT_ON_UBUS, datatypeOk, LUCI_BASE_ACL, SESSION, UBUS_MAX_MSGLEN };
