'use strict';
'require view';
'require rpc';
'require poll';
'require ui';
'require dom';
'require pathosd.common as common';

/*
 * Live state of pathosd from ubus ("ubus call pathosd status"), refreshed
 * every 5 s: BGP peers, one page of VIPs with their state, and the checks of
 * those VIPs. A router may have thousands of VIPs, and a ubus reply is at
 * most 1 MiB: the daemon answers one page of the VIPs that match a search
 * and a state filter, with the counts over all of them (vip_counts). Drain
 * and "check now" call the daemon's ubus methods; the rpcd ACL in
 * luci-app-pathosd.json grants them to the write role only.
 *
 * Every call has reject: true. Without it rpc.js resolves a ubus error
 * status (4 NOT_FOUND for a VIP that no longer exists, or for a pathosd
 * that is not on ubus) to the expect default, and a failed Drain would
 * read "done".
 */

var callStatus = rpc.declare({
	object: 'pathosd',
	method: 'status',
	params: [ 'offset', 'limit', 'search', 'state', 'health' ],
	expect: { '': {} },
	reject: true
});

var callCheck = rpc.declare({
	object: 'pathosd',
	method: 'check',
	params: [ 'vip', 'check' ],
	expect: { '': {} },
	reject: true
});

var callDrain = rpc.declare({
	object: 'pathosd',
	method: 'drain',
	params: [ 'vip', 'enable' ],
	expect: { '': {} },
	reject: true
});

var callServiceList = rpc.declare({
	object: 'service',
	method: 'list',
	params: [ 'name' ],
	expect: { '': {} },
	reject: true
});

var POLL_INTERVAL = 5;
/* How long the result of Check now or Drain stays on the page. */
var NOTICE_MS = 30000;
/* VIPs per page: a page with its checks stays far below ubus's 1 MiB. */
var PAGE_SIZE = 50;

var badge = common.badge;

/* A login with read access only (the menu entry's ACL without write): its
 * Check now and Drain would be refused by rpcd, so they are shown disabled,
 * as LuCI disables Save for such a login. */
function readOnly() {
	return !!(L.hasViewPermission && L.hasViewPermission() === false);
}

function actionAttrs(attrs) {
	if (readOnly()) {
		attrs.disabled = '';
		attrs.title = _('Needs write access to luci-app-pathosd');
	}
	return attrs;
}

function formatDuration(secs) {
	var d, h, m, s, out = [];

	if (secs == null || isNaN(secs))
		return '-';

	secs = Math.floor(secs);
	d = Math.floor(secs / 86400);
	h = Math.floor(secs / 3600) % 24;
	m = Math.floor(secs / 60) % 60;
	s = secs % 60;

	if (d > 0) out.push(d + 'd');
	if (d > 0 || h > 0) out.push(h + 'h');
	if (d > 0 || h > 0 || m > 0) out.push(m + 'm');
	out.push(s + 's');

	return out.join(' ');
}

function orDash(v) {
	return (v == null || v === '') ? '-' : String(v);
}

function list(arr) {
	return (Array.isArray(arr) && arr.length) ? arr.join(' ') : '-';
}

/* The router's clock now, from the status itself, so the browser's clock and
 * time zone do not matter for "ago". */
function routerNow(status) {
	var start = status ? Date.parse(status.start_time) : NaN;
	return isNaN(start) ? Date.now() : start + (status.uptime_seconds || 0) * 1000;
}

/* "12s ago", with the local time as a tooltip, like LuCI's status pages. */
function ago(t, now) {
	var ms = Date.parse(t);

	if (t == null || isNaN(ms))
		return '-';

	return E('span', { 'title': new Date(ms).toLocaleString() }, [
		_('%s ago').replace('%s', formatDuration(Math.max(0, now - ms) / 1000))
	]);
}

function localTime(t) {
	var d = new Date(t);
	return isNaN(d.getTime()) ? String(t) : d.toLocaleString();
}

/* A rejected reload, or one applied only in part, until a later one is
 * applied. */
function renderReload(status) {
	var r = status ? status.last_reload : null;
	var partial = r && r.result === 'partially_applied';

	if (!r || (r.result !== 'rejected' && !partial))
		return E('div');

	if (partial)
		return E('div', { 'class': 'alert-message warning pathosd-reload-partial' }, [
			E('h4', [ _('pathosd applied the configuration only in part') ]),
			E('p', [ _('Reload at %s did not apply:').replace('%s', localTime(r.time)) ]),
			E('ul', (Array.isArray(r.errors) ? r.errors : []).map(function(e) {
				return E('li', [ String(e) ]);
			})),
			E('p', [ _('The rest of the configuration runs. Fix it under Configuration and apply again.') ])
		]);

	return E('div', { 'class': 'alert-message danger pathosd-reload-rejected' }, [
		E('h4', [ _('pathosd rejected the configuration: it still runs the previous one') ]),
		E('p', [ _('Reload at %s failed with:').replace('%s', localTime(r.time)) ]),
		E('ul', (Array.isArray(r.errors) ? r.errors : []).map(function(e) {
			return E('li', [ String(e) ]);
		})),
		E('p', [ _('Fix it under Configuration and apply again.') ])
	]);
}

/* The OTLP exporter (status.otel, null while nothing is exported): per
 * signal, its collector, whether it takes the exports, the next try and
 * the queue, as /status has them. */
function renderOtel(status) {
	var o = status ? status.otel : null;
	var names = { metrics: _('Metrics'), traces: _('Traces'), logs: _('Logs') };

	if (!o)
		return E('div');

	return E('div', { 'class': 'cbi-section pathosd-otel' }, [
		E('p', [ _('OTLP export') + ': ' + _('%d exported, %d failed attempts, %d dropped')
			.replace('%d', o.exported || 0).replace('%d', o.failed || 0).replace('%d', o.dropped || 0) ]),
		E('ul', Object.keys(names).filter(function(k) { return o[k]; }).map(function(k) {
			var s = o[k];

			return E('li', { 'data-signal': k, 'class': s.last_error ? 'pathosd-otel-failing' : 'pathosd-otel-ok' }, [
				names[k] + ' \u2192 ' + orDash(s.endpoint) + ': ' +
				(s.last_error ? _('failing (%s)').replace('%s', s.last_error) : _('accepted')) +
				(s.next_try_in_ms != null ? ', ' + _('next try in %s').replace('%s', formatDuration(Math.ceil(s.next_try_in_ms / 1000))) : '') +
				', ' + N_(s.queued || 0, '%d request queued', '%d requests queued').replace('%d', s.queued || 0)
			]);
		}))
	]);
}

/* A VIP that has never been announced is withdrawn whatever its
 * fail_action: lower_priority pessimizes only a VIP that was healthy once. */
function neverHealthy(v) {
	var t = v.transitions;
	return v.state_name === 'withdrawn' && t != null && !t.announced && !t.pessimized;
}

/* The page of a reply; an older pathosd answers every VIP at once, with no
 * counts: filter and page them here. */
function pageOf(status, q) {
	var vips = (status && Array.isArray(status.vips)) ? status.vips : [];
	var counts, matched, needle, page;

	if (!status || status.vip_counts != null)
		return status;

	counts = { total: vips.length, announced: 0, pessimized: 0, withdrawn: 0, healthy: 0, unhealthy: 0, drained: 0 };
	vips.forEach(function(v) {
		if (counts[v.state_name] != null) counts[v.state_name]++;
		if (counts[v.health_name] != null) counts[v.health_name]++;
		if (v.drain) counts.drained++;
	});
	needle = (q.search || '').toLowerCase();
	matched = vips.filter(function(v) {
		return (!needle || String(v.name).toLowerCase().indexOf(needle) >= 0 || String(v.prefix).toLowerCase().indexOf(needle) >= 0) &&
			(!q.state || v.state_name === q.state) && (!q.health || v.health_name === q.health);
	});
	page = matched.slice(q.offset, q.offset + q.limit);

	return Object.assign({}, status, {
		vips: page,
		vip_counts: counts,
		vips_matched: matched.length,
		offset: q.offset,
		limit: q.limit,
		next_offset: q.offset + page.length < matched.length ? q.offset + page.length : null
	});
}

return view.extend({
	load: function() {
		this.query = { offset: 0, limit: PAGE_SIZE, search: '', state: '', health: '' };
		this.previous = [];
		this.seq = 0;

		return Promise.all([
			L.resolveDefault(this.callPage(), null),
			L.resolveDefault(callServiceList('pathosd'), {}),
			common.enabled()
		]);
	},

	/* One page; null when the call failed, with why in this.statusError. */
	callPage: function() {
		var self = this, q = this.query;

		return callStatus(q.offset, q.limit, q.search || undefined, q.state || undefined, q.health || undefined)
			.then(function(st) {
				self.statusError = null;
				return pageOf(st, q);
			}, function(err) {
				self.statusError = common.callError(err);
				return null;
			});
	},

	/* Runs a ubus call from a button, then refreshes the tables at once. The
	 * result replaces the previous one instead of piling up notifications; a
	 * failure is also shown as a dialog, wherever the page is scrolled. */
	handleAction: function(promise, what, vip, check) {
		var self = this;

		return promise.then(function(reply) {
			self.notice('info', what + ': ' + self.summarize(reply));
			return self.refresh();
		}).catch(function(err) {
			var e = common.callError(err);

			/* Not found: the VIP, or (a check of a VIP still there) the
			 * check, as the refreshed page shows it. */
			return self.refresh().then(function() {
				var vipThere = self.status && (self.status.vips || []).some(function(v) { return v.name === vip; });
				var text = what + ': ' + (e.absent
					? _('pathosd is not running (not on ubus); the table is refreshed now.')
					: (e.ubus === 4 && check && vipThere)
					? _('VIP %s has no check %s in the running pathosd (renamed or deleted since the page was drawn?); the table is refreshed now.').replace('%s', vip).replace('%s', check)
					: e.ubus === 4
					? _('VIP %s is not in the running pathosd (deleted or renamed, or pathosd is not running); the table is refreshed now.').replace('%s', vip)
					: e.text);

				self.notice('danger', text);
				ui.showModal(_('pathosd'), [
					E('p', { 'class': 'pathosd-error' }, [ text ]),
					E('div', { 'class': 'right' }, [
						E('button', { 'class': 'cbi-button', 'click': ui.hideModal }, [ _('Dismiss') ])
					])
				]);
			});
		});
	},

	/* One result at a time, gone at the first refresh after NOTICE_MS. */
	notice: function(cls, text) {
		this.noticeAt = Date.now();
		dom.content(this.noticeNode, E('div', { 'class': 'alert-message ' + cls + ' pathosd-result' }, [
			E('p', [ text ])
		]));
	},

	summarize: function(reply) {
		if (!reply)
			return _('done');

		if (reply.result && reply.result.detail != null)
			return (reply.result.success ? _('passed') : _('failed')) + ' (' + reply.result.detail + '), ' + _('VIP state') + ' ' + orDash(reply.state);

		if (reply.drain != null)
			return (reply.drain ? _('draining') : _('not draining')) + ', ' + _('VIP state') + ' ' + orDash(reply.state);

		return _('done');
	},

	handleCheck: function(vip, check) {
		var label = check ? _('Check %s of %s').replace('%s', check).replace('%s', vip) : _('Checks of %s').replace('%s', vip);
		return this.handleAction(check ? callCheck(vip, check) : callCheck(vip), label, vip, check);
	},

	handleDrain: function(vip, enable) {
		var label = (enable ? _('Drain %s') : _('Undrain %s')).replace('%s', vip);
		return this.handleAction(callDrain(vip, enable), label, vip);
	},

	/* Search, filters and pages: a new query starts at the first page. */
	setQuery: function(key, value) {
		this.query[key] = value;
		this.query.offset = 0;
		this.previous = [];
		return this.refresh();
	},

	handleNext: function() {
		var next = this.status ? this.status.next_offset : null;

		if (next == null)
			return Promise.resolve();
		this.previous.push(this.query.offset);
		this.query.offset = next;
		return this.refresh();
	},

	handlePrevious: function() {
		if (!this.previous.length)
			return Promise.resolve();
		this.query.offset = this.previous.pop();
		return this.refresh();
	},

	renderSummary: function(status, svc) {
		var c, st;

		if (!status) {
			/* On ubus (or not allowed), but no answer: say so, not why it
			 * would not be on ubus. */
			if (this.statusError && this.statusError.ubus !== 4)
				return E('div', { 'class': 'alert-message warning pathosd-down', 'data-service': 'error' }, [
					_('pathosd did not answer the status request: %s').replace('%s', this.statusError.text)
				]);
			st = common.serviceState(this.enabled, svc);

			return E('div', { 'class': 'alert-message warning pathosd-down', 'data-service': st.state }, [
				badge(st.state), ' ', st.text
			]);
		}

		c = status.vip_counts || {};
		return E('div', { 'class': 'cbi-section pathosd-summary' }, [
			E('p', [
				_('Router ID') + ': ' + orDash(status.router_id) + ' \u00b7 ' +
				_('AS') + ': ' + orDash(status.asn) + ' \u00b7 ' +
				_('Version') + ': ' + orDash(status.version) + ' \u00b7 ' +
				_('Uptime') + ': ' + formatDuration(status.uptime_seconds)
			]),
			E('p', { 'class': 'pathosd-counts' }, [
				N_(c.total || 0, '%d VIP', '%d VIPs').replace('%d', c.total || 0) + ': ' +
				_('%d announced, %d pessimized, %d withdrawn; %d unhealthy, %d drained')
					.replace('%d', c.announced || 0).replace('%d', c.pessimized || 0).replace('%d', c.withdrawn || 0)
					.replace('%d', c.unhealthy || 0).replace('%d', c.drained || 0)
			])
		]);
	},

	/* A peer's BFD session (/status peers[].bfd; null while the neighbor
	 * has no BFD): its state as a badge, the neighbor's, the times it went
	 * down, and why it is not up (the RFC 5880 diagnostic); the rest as the
	 * tooltip. */
	bfdCell: function(b) {
		var out, tip = [], dropped = [];

		if (b == null || typeof b !== 'object')
			return '-';
		out = [ badge(orDash(b.state)), ' ', _('neighbor: %s').replace('%s', orDash(b.remote_state)), ', ',
			N_(b.downs || 0, '%d down', '%d downs').replace('%d', b.downs || 0) ];
		if (b.state !== 'up' && b.diagnostic && b.diagnostic !== 'no diagnostic')
			out.push(', ', E('em', { 'class': 'pathosd-bfd-diag' }, [ b.diagnostic ]));
		tip.push(b.multihop ? _('multihop') : _('single hop'));
		if (b.state === 'up')
			tip.push(_('up for %s').replace('%s', formatDuration(b.uptime_seconds)));
		tip.push(_('discriminators %s / %s').replace('%s', orDash(b.local_discriminator)).replace('%s', orDash(b.remote_discriminator)));
		Object.keys(b.dropped || {}).forEach(function(k) {
			if (b.dropped[k])
				dropped.push(k + ' ' + b.dropped[k]);
		});
		if (dropped.length)
			tip.push(_('dropped: %s').replace('%s', dropped.join(', ')));
		return E('span', { 'class': 'pathosd-bfd', 'title': tip.join('; ') }, out);
	},

	peerRows: function(status) {
		var self = this;

		var peers = (status && Array.isArray(status.peers)) ? status.peers : [];

		return peers.map(function(p) {
			return [
				orDash(p.name),
				orDash(p.address),
				orDash(p.peer_asn),
				badge(orDash(p.session_state)),
				self.bfdCell(p.bfd),
				p.required ? _('yes') : _('no'),
				p.session_state === 'established' ? formatDuration(p.uptime_seconds) : '-',
				orDash(p.advertised),
				orDash(p.flaps),
				orDash(p.last_error || p.notification_received || p.notification_sent)
			];
		});
	},

	vipRows: function(status) {
		var self = this;
		var vips = (status && Array.isArray(status.vips)) ? status.vips : [];

		return vips.map(function(v) {
			var drains = [];

			if (v.drain_file) drains.push(_('file'));
			if (v.drain_api) drains.push(_('API'));
			// policy.drain_until_flows_below: the router's flows to the VIP
			// the drain still waits for (only while it waits).
			if (v.flows != null)
				drains.push(_('%d flows left').replace('%d', v.flows));

			return [
				orDash(v.name),
				// Every prefix of the VIP (a daemon before prefixes had one).
				orDash((v.prefixes || [ v.prefix ]).join(', ')),
				neverHealthy(v)
					? E('span', [ badge(orDash(v.state_name)), ' ', E('em', { 'class': 'pathosd-never-healthy' }, [ _('never healthy yet: a VIP is first announced once its checks pass') ]) ])
					: (v.damping && v.damping.suppressed)
						? E('span', [ badge(orDash(v.state_name)), ' ', E('em', {
							'class': 'pathosd-damped',
							'title': _('Damped after flapping (penalty %d): announced again when the penalty has decayed below the reuse limit, at %s').replace('%d', v.damping.penalty).replace('%s', v.damping.reuse_time ? new Date(v.damping.reuse_time).toLocaleString() : '-')
						}, [ _('damped') ]) ])
						: badge(orDash(v.state_name)),
				v.local_address_assigned === false
					? E('span', [ badge(orDash(v.health_name)), ' ', E('em', { 'class': 'pathosd-no-address' }, [ _('address not local') ]) ])
					: badge(orDash(v.health_name)),
				orDash(v.checks_policy),
				String(v.as_path_prepend || 0),
				list((v.communities || []).concat(v.large_communities || [])),
				drains.length ? drains.join(', ') : '-',
				orDash(v.last_transition_reason),
				E('div', { 'class': 'pathosd-actions' }, [
					E('button', actionAttrs({
						'class': 'btn cbi-button cbi-button-action pathosd-check',
						'data-vip': v.name,
						'click': ui.createHandlerFn(self, 'handleCheck', v.name, null)
					}), [ _('Check now') ]),
					' ',
					E('button', actionAttrs({
						'class': 'btn cbi-button ' + (v.drain_api ? 'cbi-button-positive' : 'cbi-button-negative') + ' pathosd-drain',
						'data-vip': v.name,
						'data-enable': v.drain_api ? '0' : '1',
						'title': v.drain_api ? _('End the drain: the VIP is announced as its health says')
							: _('Pessimize this VIP: it stays announced, with the AS-path prepends and communities of lower priority, until Undrain (a drain does not withdraw)'),
						'click': ui.createHandlerFn(self, 'handleDrain', v.name, !v.drain_api)
					}), [ v.drain_api ? _('Undrain') : _('Drain (pessimize)') ])
				])
			];
		});
	},

	checkRows: function(status) {
		var self = this;
		var rows = [];
		var vips = (status && Array.isArray(status.vips)) ? status.vips : [];
		var now = routerNow(status);

		vips.forEach(function(v) {
			(Array.isArray(v.checks) ? v.checks : []).forEach(function(c) {
				var last = c.last_check_success == null ? '-' : (c.last_check_success ? _('pass') : _('fail'));

				rows.push([
					orDash(v.name),
					orDash(c.name),
					orDash(c.type),
					badge(orDash(c.health_name)),
					String(c.consecutive_ok || 0) + ' / ' + String(c.consecutive_fail || 0),
					last + (c.last_check_duration_ms != null ? ' (' + c.last_check_duration_ms + ' ms)' : ''),
					orDash(c.last_check_detail),
					ago(c.last_check_time, now),
					E('button', actionAttrs({
						'class': 'btn cbi-button cbi-button-action pathosd-check-one',
						'data-vip': v.name,
						'data-check': c.name,
						'click': ui.createHandlerFn(self, 'handleCheck', v.name, c.name)
					}), [ _('Check now') ])
				]);
			});
		});

		return rows;
	},

	/* "VIPs 51-100 of 1000 matching", Previous and Next. */
	renderPager: function(status) {
		var first, shown, matched;

		if (!status)
			return E([]);
		shown = (status.vips || []).length;
		first = status.offset || 0;
		matched = status.vips_matched != null ? status.vips_matched : shown;

		return E('div', { 'class': 'cbi-section-create pathosd-pager' }, [
			E('span', { 'class': 'pathosd-range' }, [
				shown ? _('VIPs %d\u2013%d of %d').replace('%d', first + 1).replace('%d', first + shown).replace('%d', matched)
					: _('No VIP matches')
			]),
			' ',
			E('button', {
				'class': 'cbi-button pathosd-prev',
				'disabled': this.previous.length ? null : '',
				'click': ui.createHandlerFn(this, 'handlePrevious')
			}, [ _('Previous') ]),
			' ',
			E('button', {
				'class': 'cbi-button pathosd-next',
				'disabled': status.next_offset != null ? null : '',
				'click': ui.createHandlerFn(this, 'handleNext')
			}, [ _('Next') ])
		]);
	},

	renderFilters: function() {
		var self = this;
		var opt = function(v, label, cur) {
			return E('option', { 'value': v, 'selected': v === cur ? '' : null }, [ label ]);
		};

		return E('div', { 'class': 'cbi-section-create pathosd-filters' }, [
			E('input', {
				'type': 'search',
				'class': 'cbi-input-text pathosd-search',
				'placeholder': _('Search a VIP name or prefix'),
				'value': this.query.search,
				'input': function(ev) { return self.setQuery('search', ev.target.value); }
			}),
			' ',
			E('select', {
				'class': 'cbi-input-select pathosd-state',
				'change': function(ev) { return self.setQuery('state', ev.target.value); }
			}, [
				opt('', _('any state'), this.query.state),
				opt('announced', _('announced'), this.query.state),
				opt('pessimized', _('pessimized'), this.query.state),
				opt('withdrawn', _('withdrawn'), this.query.state)
			]),
			' ',
			E('select', {
				'class': 'cbi-input-select pathosd-health',
				'change': function(ev) { return self.setQuery('health', ev.target.value); }
			}, [
				opt('', _('any health'), this.query.health),
				opt('healthy', _('healthy'), this.query.health),
				opt('unhealthy', _('unhealthy'), this.query.health)
			])
		]);
	},

	table: function(cls, titles) {
		return E('table', { 'class': 'table ' + cls }, [
			E('tr', { 'class': 'tr table-titles' }, titles.map(function(t) {
				return E('th', { 'class': 'th' }, [ t ]);
			}))
		]);
	},

	update: function(status, svc) {
		var filtered = this.query.search || this.query.state || this.query.health;

		this.status = status;
		if (this.noticeAt && Date.now() - this.noticeAt >= NOTICE_MS) {
			this.noticeAt = null;
			dom.content(this.noticeNode, null);
		}
		dom.content(this.reloadNode, renderReload(status));
		dom.content(this.summaryNode, this.renderSummary(status, svc));
		dom.content(this.otelNode, renderOtel(status));
		dom.content(this.pagerNode, this.renderPager(status));
		cbi_update_table(this.peerTable, this.peerRows(status),
			E('em', [ status ? _('No BGP neighbors configured') : _('No data') ]));
		cbi_update_table(this.vipTable, this.vipRows(status),
			E('em', [ status ? (filtered ? _('No VIP matches') : _('No VIPs configured')) : _('No data') ]));
		cbi_update_table(this.checkTable, this.checkRows(status),
			E('em', [ status ? _('No checks on this page') : _('No data') ]));
	},

	/* A reply that comes after a newer request was sent is dropped, so a
	 * slow answer to an old search cannot replace a newer page. */
	refresh: function() {
		var self = this, seq = ++this.seq;

		return Promise.all([
			L.resolveDefault(this.callPage(), null),
			L.resolveDefault(callServiceList('pathosd'), {})
		]).then(function(res) {
			if (seq === self.seq)
				self.update(res[0], res[1]);
		});
	},

	render: function(data) {
		var self = this;

		this.summaryNode = E('div', { 'class': 'pathosd-summary-box' });
		this.reloadNode = E('div', { 'class': 'pathosd-reload' });
		this.noticeNode = E('div', { 'class': 'pathosd-notice' });
		this.pagerNode = E('div', { 'class': 'pathosd-pager-box' });
		this.enabled = data[2];
		this.otelNode = E('div', { 'class': 'pathosd-otel-box' });

		this.peerTable = this.table('pathosd-peers', [
			_('Name'), _('Address'), _('AS'), _('State'), _('BFD'), _('Required'),
			_('Up for'), _('Advertised'), _('Flaps'), _('Last error')
		]);

		this.vipTable = this.table('pathosd-vips', [
			_('Name'), _('Prefix'), _('State'), _('Health'), _('Policy'),
			_('Prepends'), _('Communities'), _('Drained by'), _('Last transition'), ''
		]);

		this.checkTable = this.table('pathosd-checks', [
			_('VIP'), _('Check'), _('Type'), _('Health'), _('OK / fail in a row'),
			_('Last result'), _('Detail'), _('Last run'), ''
		]);

		this.update(data[0], data[1]);
		/* The header's Unsaved Changes dialog applies here too. */
		common.guardApply(null);

		poll.add(function() {
			return self.refresh();
		}, POLL_INTERVAL);

		return E('div', { 'class': 'cbi-map' }, [
			common.style(),
			E('h2', [ _('pathosd') ]),
			E('div', { 'class': 'cbi-map-descr' }, [
				_('Health-checked VIP announcements over BGP. Refreshed every 5 seconds.')
			]),
			this.reloadNode,
			this.summaryNode,
			this.otelNode,
			this.noticeNode,
			E('h3', [ _('BGP neighbors') ]),
			E('div', { 'class': 'cbi-section' }, [ this.peerTable ]),
			E('h3', [ _('VIPs') ]),
			this.renderFilters(),
			E('div', { 'class': 'cbi-section' }, [ this.vipTable ]),
			this.pagerNode,
			E('h3', [ _('Checks of the VIPs above') ]),
			E('div', { 'class': 'cbi-section' }, [ this.checkTable ])
		]);
	},

	handleSave: null,
	handleSaveApply: null,
	handleReset: null
});
