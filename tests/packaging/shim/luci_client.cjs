'use strict';
// Stand-ins for LuCI's client classes, for running the pathosd views in
// node:vm. No registry package carries luci.js/form.js/uci.js/rpc.js, so
// these re-implement the behaviour the views depend on, after LuCI's own
// semantics (openwrt/luci modules/luci-base/htdocs/luci-static/resources):
//
// * rpc.declare: a ubus error status resolves to the `expect` default unless
//   the declaration has `reject: true`, which rejects with rpc.js's
//   "RPC call to OBJ/METHOD failed with ubus code N: TEXT"; an HTTP/JSON-RPC
//   refusal (e.g. "Access denied") always rejects.
// * uci: load/get/set/unset/add/remove/sections over a staged copy, with the
//   list of changes that Save & Apply would send (set '' or null unsets).
// * form: Map/NamedSection/TypedSection/GridSection and
//   Value/ListValue/DynamicList/Flag with LuCI's defaults and parse():
//   rmempty true, Flag default '0' and "remove when equal to the default"
//   (so a Flag with default '1' writes '0' when unticked), a Value that is
//   empty is removed, a select cannot hold a value it does not offer (it
//   shows its first choice), the GridSection shows textvalue() or "none",
//   and its edit dialog (renderMoreOptionsModal) is a new Map whose options
//   are new instances with the grid option's own properties copied.
// * ui: notifications, modal, changes.apply; dom.content; poll.add; view.

const assert = require('assert');

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

function kind(v) {
	return Array.isArray(v) ? 'array' : (v === null ? 'null' : typeof v);
}

// replies[object.method]: the reply, { ubusStatus: N } for a ubus error
// status, an Error (the HTTP/JSON-RPC layer refused the call), or a function
// of the arguments returning one of those.
function makeRpc(replies) {
	const declared = [];
	const calls = [];
	return {
		declared,
		calls,
		replies,
		declare(opts) {
			declared.push({ object: opts.object, method: opts.method, reject: !!opts.reject });
			return function() {
				const args = {};
				(opts.params || []).forEach((p, i) => { args[p] = arguments[i]; });
				// What rpc.js sends: JSON, where undefined members vanish.
				const sent = JSON.parse(JSON.stringify(args));
				calls.push({ object: opts.object, method: opts.method, args: sent });
				let r = replies[opts.object + '.' + opts.method];
				if (typeof r === 'function') r = r(sent);
				if (r instanceof Error) return Promise.reject(r);
				let ret = r;
				if (r && typeof r === 'object' && r.ubusStatus != null) {
					if (opts.reject)
						return Promise.reject(new Error('RPC call to ' + opts.object + '/' + opts.method +
							' failed with ubus code ' + r.ubusStatus + ': ' + UBUS_STATUS[r.ubusStatus]));
					// rpc.js hands the bare status on, and `expect` then
					// replaces it (a number is no object) with its default.
					ret = r.ubusStatus;
				}
				if (opts.expect) {
					for (const k in opts.expect) {
						if (ret != null && k !== '') ret = ret[k];
						if (ret == null || kind(ret) !== kind(opts.expect[k]))
							ret = JSON.parse(JSON.stringify(opts.expect[k]));
						break;
					}
				}
				return Promise.resolve(ret == null ? ret : JSON.parse(JSON.stringify(ret)));
			};
		}
	};
}

// ------------------------------------------------------------------ uci

// sections: [ { '.type': 'vip', '.name': 'web', prefix: '...', ... } ] in
// file order; '.anonymous' when the section has no name in the file.
function makeUci(sections) {
	const data = sections.map((s) => Object.assign({ '.anonymous': false }, JSON.parse(JSON.stringify(s))));
	const changes = [];
	const loaded = [];
	let next = 0;
	const find = (sid) => data.find((s) => s['.name'] === sid);
	const uci = {
		data, changes, loaded,
		load(conf) { loaded.push(conf); return Promise.resolve([ conf ]); },
		save() { return Promise.resolve(); },
		get(conf, sid, opt) {
			const s = find(sid);
			if (!s) return null;
			if (opt == null) return s;
			const v = s[opt];
			return v == null ? null : (Array.isArray(v) ? v.slice() : String(v));
		},
		set(conf, sid, opt, val) {
			const s = find(sid);
			if (!s || opt == null || opt.charAt(0) === '.') return;
			if (val == null || val === '') return uci.unset(conf, sid, opt);
			val = Array.isArray(val) ? val.map(String) : String(val);
			changes.push([ 'set', sid, opt, val ]);
			s[opt] = val;
		},
		unset(conf, sid, opt) {
			const s = find(sid);
			if (!s || !(opt in s)) return;
			changes.push([ 'unset', sid, opt ]);
			delete s[opt];
		},
		add(conf, type, name) {
			const sid = name || ('new' + (0x1a2b3c + next++).toString(16));
			data.push({ '.type': type, '.name': sid, '.anonymous': !name });
			changes.push([ 'add', type, sid ]);
			return sid;
		},
		remove(conf, sid) {
			const i = data.findIndex((s) => s['.name'] === sid);
			if (i < 0) return;
			data.splice(i, 1);
			// uci.js: removing a section added in this session drops it
			// from the staged changes altogether.
			const added = changes.findIndex((c) => c[0] === 'add' && c[2] === sid);
			if (added >= 0) {
				for (let k = changes.length - 1; k >= 0; k--)
					if (changes[k][1] === sid || (changes[k][0] === 'add' && changes[k][2] === sid)) changes.splice(k, 1);
				return;
			}
			changes.push([ 'remove', sid ]);
		},
		sections(conf, type) {
			return data.filter((s) => type == null || s['.type'] === type);
		}
	};
	return uci;
}

// ------------------------------------------------------------------ ui

function makeUi() {
	const ui = {
		notes: [],
		applied: [],
		modal: null,
		addNotification(title, body, cls) {
			const n = { text: text(title) + text(body), cls };
			ui.notes.push(n);
			return n;
		},
		showModal(title, children, cls) { ui.modal = { title, children }; return ui.modal; },
		hideModal() { ui.modal = null; },
		changes: {
			apply(checked) { ui.applied.push(checked); return Promise.resolve(); }
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

// ----------------------------------------------------------------- form

// form.js isEqual: strings, arrays of strings, null.
function isEqual(x, y) {
	if (x != null && y != null && typeof x !== typeof y) return false;
	if ((x == null) !== (y == null)) return false;
	if (Array.isArray(x)) return x.length === y.length && x.every((v, i) => isEqual(v, y[i]));
	return x == y;
}

function makeForm(uci, ui) {
	const pageMaps = [];

	class Map {
		constructor(config, title, description) {
			this.config = config;
			this.title = title;
			this.description = description;
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

		load() {
			return Promise.resolve(this.data.load(this.config))
				.then(() => Promise.all(this.children.map((s) => s.load())));
		}

		render() {
			return this.load().then(() => this.renderContents());
		}

		// Every widget is made afresh from cfgvalue() (or the default), as
		// LuCI re-renders the map after load and save.
		renderContents() {
			this.widgets = {};
			this.children.forEach((s) => s.renderAll());
			if (!this.parent && pageMaps.indexOf(this) < 0) pageMaps.push(this);
			this.node = { tag: 'div', attrs: { 'class': 'cbi-map' }, children: [], map: this };
			return Promise.resolve(this.node);
		}

		reset() { return this.renderContents(); }

		isDependencySatisfied(deps, sid, section) {
			if (!deps.length) return true;
			return deps.some((d) => Object.keys(d).every((k) => {
				const o = section.getOption(k);
				return !!o && o.isActive(sid) && isEqual(o.formvalue(sid), d[k]);
			}));
		}

		parse() {
			return Promise.all(this.children.map((s) => s.parse()));
		}

		// form.js Map.save: parse (validation failures reject: "Cannot save
		// due to invalid values"), save, load, render again.
		save(cb) {
			this.errors = [];
			return this.parse()
				.then(cb)
				.then(() => this.data.save())
				.then(() => this.load())
				.catch((e) => { this.errors.push(String(e && e.message || e)); return Promise.reject(e); })
				.finally(() => this.renderContents());
		}
	}

	class AbstractSection {
		constructor(map, sectiontype, title, description) {
			this.map = map;
			this.config = map.config;
			this.sectiontype = sectiontype;
			this.title = title;
			this.description = description;
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

		formvalue(sid, name) {
			const o = this.getOption(name);
			return o ? o.formvalue(sid) : null;
		}

		load() {
			return Promise.all(this.cfgsections().map((sid) =>
				Promise.all(this.children.map((o) => o.load(sid))).then((vals) => {
					vals.forEach((v, i) => this.children[i].cfgvalue(sid, v));
				})));
		}

		widgetOptions() { return this.children; }

		renderAll() {
			this.cfgsections().forEach((sid) => this.widgetOptions().forEach((o, i) => {
				o.renderWidget(sid, i, o.cfgvalue(sid));
			}));
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

		handleAdd(ev, name) {
			const sid = this.map.data.add(this.config, this.sectiontype, name);
			this.addedSection = sid;
			return this.renderMoreOptionsModal(sid);
		}

		// The edit dialog: a new Map with a NamedSection, and each option a
		// new instance of its class with the grid option's own properties.
		renderMoreOptionsModal(sid) {
			const m = new Map(this.config);
			m.parent = this.map;
			const s = m.section(NamedSection, sid, this.sectiontype);
			s.tabs = this.tabs;
			s.tab_names = this.tab_names;
			this.children.forEach((o1) => {
				if (o1.modalonly === false) return;
				const o2 = s.option(o1.constructor, o1.option, o1.title, o1.description);
				Object.keys(o1).forEach((k) => {
					if ([ 'map', 'section', 'option', 'title', 'description' ].indexOf(k) < 0) o2[k] = o1[k];
				});
			});
			return m.render().then(() => {
				ui.showModal(this.title, [], 'cbi-modal');
				ui.modal.map = m;
				ui.modal.section = s;
				ui.modal.owner = this;
				return m;
			});
		}

		handleModalSave(m) {
			return m.save()
				.then(() => this.map.load())
				.then(() => this.map.reset())
				.then(() => { ui.hideModal(); this.addedSection = null; })
				.catch(() => {});
		}

		handleModalCancel() {
			if (this.addedSection != null) {
				this.map.data.remove(this.config, this.addedSection);
				this.addedSection = null;
			}
			ui.hideModal();
			return Promise.resolve();
		}
	}

	class AbstractValue {
		constructor(map, section, option, title, description) {
			this.map = map;
			this.section = section;
			this.option = option;
			this.title = title;
			this.description = description;
			this.config = map.config;
			this.deps = [];
			this.rmempty = true;
			this.default = null;
			this.optional = false;
		}

		depends(field, value) {
			let d = field;
			if (typeof field === 'string') { d = {}; d[field] = value; }
			this.deps.push(d);
		}

		cbid(sid) { return 'cbid.' + this.config + '.' + sid + '.' + this.option; }

		load(sid) { return this.map.data.get(this.config, sid, this.ucioption || this.option); }

		cfgvalue(sid, set) {
			if (arguments.length === 2) {
				this.data = this.data || {};
				this.data[sid] = set;
			}
			return this.data ? this.data[sid] : null;
		}

		widget(sid) { return this.map.widgets[this.cbid(sid)] || null; }

		formvalue(sid) {
			const w = this.widget(sid);
			return w ? w.getValue() : null;
		}

		textvalue(sid) {
			let v = this.cfgvalue(sid);
			if (v == null) v = this.default;
			return v != null ? String(v) : null;
		}

		validate() { return true; }

		// validation.js: an empty value must be optional; then the
		// option's validate() runs, for an empty value too (each item of a
		// list).
		validationError(sid) {
			const v = this.formvalue(sid);
			const empty = v == null || v === '' || (Array.isArray(v) && !v.length);
			if (empty && !(this.optional || this.rmempty)) return 'Non-empty value required';
			const items = Array.isArray(v) ? v : [ v == null ? '' : v ];
			for (const item of items) {
				const r = this.validate(sid, item);
				if (r !== true) return typeof r === 'string' ? r : 'Invalid value';
			}
			return null;
		}

		isValid(sid) { return !this.widget(sid) || this.validationError(sid) == null; }

		isActive(sid) {
			return !!this.widget(sid) && this.map.isDependencySatisfied(this.deps, sid, this.section);
		}

		invalid(sid) {
			return Promise.reject(new Error(this.option + ': ' + this.validationError(sid)));
		}

		// form.js (master) AbstractValue.parse.
		parse(sid) {
			const active = this.isActive(sid);
			if (active && !this.isValid(sid)) return this.invalid(sid);
			if (active) {
				const cval = this.cfgvalue(sid);
				const fval = this.formvalue(sid);
				if (fval == null || fval == '') {
					if (this.rmempty || this.optional) return Promise.resolve(this.remove(sid));
					return Promise.reject(new Error('Option "' + this.option + '" must not be empty.'));
				} else if (this.forcewrite || !isEqual(cval, fval)) {
					return Promise.resolve(this.write(sid, fval));
				}
			} else if (!this.retain) {
				return Promise.resolve(this.remove(sid));
			}
			return Promise.resolve();
		}

		write(sid, v) { return this.map.data.set(this.config, sid, this.ucioption || this.option, v); }

		remove(sid) { return this.map.data.unset(this.config, sid, this.ucioption || this.option); }
	}

	class Value extends AbstractValue {
		value(key, val) {
			this.keylist = this.keylist || [];
			this.keylist.push(String(key));
			this.vallist = this.vallist || [];
			this.vallist.push(String(val != null ? val : key));
		}

		// The widget holds what the user sees: the config value, else the
		// default; the placeholder is whatever it is at render time.
		renderWidget(sid, index, cfgvalue) {
			const w = {
				option: this,
				value: cfgvalue != null ? cfgvalue : this.default,
				placeholder: this.placeholder,
				choices: (this.keylist || []).slice(),
				getValue() { return this.value == null ? '' : (Array.isArray(this.value) ? this.value.join(' ') : String(this.value)); },
				set(v) { this.value = v; }
			};
			this.map.widgets[this.cbid(sid)] = w;
			return E('input', { id: this.cbid(sid) });
		}
	}

	class ListValue extends Value {
		// A <select>: it can only hold an offered value, and shows the
		// first choice when the value is not among them (unless optional).
		renderWidget(sid, index, cfgvalue) {
			const n = super.renderWidget(sid, index, cfgvalue);
			const w = this.widget(sid);
			const optional = this.optional;
			w.getValue = function() {
				if (this.value != null && this.choices.indexOf(String(this.value)) >= 0) return String(this.value);
				return optional ? '' : (this.choices.length ? this.choices[0] : '');
			};
			w.set = function(v) {
				assert.ok(this.choices.indexOf(String(v)) >= 0,
					'the select offers ' + JSON.stringify(v) + ' (it offers ' + JSON.stringify(this.choices) + ')');
				this.value = String(v);
			};
			return n;
		}
	}

	class DynamicList extends Value {
		renderWidget(sid, index, cfgvalue) {
			const n = super.renderWidget(sid, index, cfgvalue);
			const w = this.widget(sid);
			w.value = w.value == null ? [] : [].concat(w.value);
			w.getValue = function() { return this.value.slice(); };
			w.set = function(v) { this.value = [].concat(v); };
			return n;
		}
	}

	class Flag extends Value {
		constructor(...a) {
			super(...a);
			this.enabled = '1';
			this.disabled = '0';
			this.default = this.disabled;
		}

		renderWidget(sid, index, cfgvalue) {
			const n = super.renderWidget(sid, index, cfgvalue);
			const w = this.widget(sid);
			const self = this;
			w.checked = (cfgvalue != null ? cfgvalue : this.default) == this.enabled;
			w.getValue = function() { return this.checked ? self.enabled : self.disabled; };
			w.set = function(v) { this.checked = (v === true || v == self.enabled); };
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

		parse(sid) {
			if (this.isActive(sid)) {
				const fval = this.formvalue(sid);
				if (!this.isValid(sid)) return this.invalid(sid);
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
	const ui = makeUi();
	const form = makeForm(uci, ui);
	const rpc = makeRpc(opts.replies || {});
	const poll = { added: [], add(fn, interval) { this.added.push({ fn, interval }); } };
	const dom = {
		content(node, children) { node.children = children == null ? [] : [].concat(children).filter((c) => c != null); return node; },
		append(node, children) { node.children = node.children.concat(children == null ? [] : [].concat(children)); return node; }
	};
	// view.js: handleSave saves every map of the page, handleSaveApply
	// then applies the staged changes.
	const viewBase = {
		handleSave() { return Promise.all(form.pageMaps.map((m) => m.save())); },
		handleSaveApply(ev, mode) { return this.handleSave(ev).then(() => ui.changes.apply(mode == '0')); },
		handleReset() { return Promise.all(form.pageMaps.map((m) => m.reset())); }
	};
	const L = {
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

module.exports = { E, text, findAll, hasClass, makeEnv, UBUS_STATUS };
