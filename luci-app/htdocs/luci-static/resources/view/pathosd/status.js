'use strict';
'require view';
'require rpc';
'require poll';
'require ui';
'require dom';
'require uci';

/*
 * Live state of pathosd from ubus ("ubus call pathosd status"), refreshed
 * every 5 s: BGP peers, VIPs with their state, and every check of every VIP.
 * Drain and "check now" call the daemon's ubus methods; the rpcd ACL in
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

/* LuCI's own label classes (luci-theme-bootstrap and the other themes):
 * they follow the theme, dark mode included. */
var STATE_CLASSES = {
	announced: 'success',
	established: 'success',
	healthy: 'success',
	pessimized: 'warning',
	withdrawn: 'important',
	unhealthy: 'important'
};

function badge(text) {
	var cls = STATE_CLASSES[text];

	return E('span', {
		'class': 'label pathosd-badge' + (cls ? ' ' + cls : ''),
		'data-state': text
	}, [ text ]);
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

/*
 * Why pathosd is not on ubus, from the init switch (uci pathosd.main.enabled)
 * and procd's view of the service (ubus service list): disabled, enabled but
 * not started (the init script refused, e.g. an invalid file), crashed
 * (procd gave up respawning), or running but not (yet) registered.
 */
function serviceState(enabled, svc) {
	var inst = (svc && svc.pathosd && svc.pathosd.instances) ? svc.pathosd.instances : null;
	var k, i;

	if (!isOn(enabled))
		return { state: 'disabled', text: _('pathosd is disabled: tick Enabled under Configuration and Save & Apply.') };

	if (!inst || !Object.keys(inst).length)
		return { state: 'stopped', text: _('pathosd is enabled but procd runs no pathosd: the init script did not start it (an invalid configuration?). Check logread -e pathosd, then /etc/init.d/pathosd start.') };

	for (k in inst) {
		i = inst[k] || {};
		if (i.running)
			return { state: 'running', text: _('pathosd runs (PID %d) but is not (yet) registered on ubus. Check logread -e pathosd.').replace('%d', i.pid != null ? i.pid : '?') };
	}

	for (k in inst) {
		i = inst[k] || {};
		return { state: 'crashed', text: _('pathosd is enabled but not running: it exited%s and procd stopped restarting it. Check logread -e pathosd, then /etc/init.d/pathosd restart.').replace('%s', i.exit_code != null ? ' ' + _('with code %d').replace('%d', i.exit_code) : '') };
	}
}

function isOn(v) {
	return v === '1' || v === 'true' || v === 'yes' || v === 'on' || v === 'enabled';
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

/* A rejected reload, until a later one is applied. */
function renderReload(status) {
	var r = status ? status.last_reload : null;

	if (!r || r.result !== 'rejected')
		return E('div');

	return E('div', { 'class': 'alert-message danger pathosd-reload-rejected' }, [
		E('h4', [ _('pathosd rejected the configuration: it still runs the previous one') ]),
		E('p', [ _('Reload at %s failed with:').replace('%s', localTime(r.time)) ]),
		E('ul', (Array.isArray(r.errors) ? r.errors : []).map(function(e) {
			return E('li', [ String(e) ]);
		})),
		E('p', [ _('Fix it under Configuration and apply again.') ])
	]);
}

return view.extend({
	load: function() {
		return Promise.all([
			L.resolveDefault(callStatus(), null),
			L.resolveDefault(callServiceList('pathosd'), {}),
			L.resolveDefault(uci.load('pathosd'), null)
		]);
	},

	/* Runs a ubus call from a button, then refreshes the tables at once. The
	 * result replaces the previous one instead of piling up notifications. */
	handleAction: function(promise, what) {
		var self = this;

		return promise.then(function(reply) {
			self.notice('info', what + ': ' + self.summarize(reply));
			return self.refresh();
		}).catch(function(err) {
			self.notice('danger', what + ': ' + (err && err.message ? err.message : String(err)));
		});
	},

	notice: function(cls, text) {
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
		return this.handleAction(check ? callCheck(vip, check) : callCheck(vip), label);
	},

	handleDrain: function(vip, enable) {
		var label = (enable ? _('Drain %s') : _('Undrain %s')).replace('%s', vip);
		return this.handleAction(callDrain(vip, enable), label);
	},

	renderSummary: function(status, svc) {
		if (!status) {
			var st = serviceState(uci.get('pathosd', 'main', 'enabled'), svc);

			return E('div', { 'class': 'alert-message warning pathosd-down', 'data-service': st.state }, [ st.text ]);
		}

		return E('div', { 'class': 'cbi-section pathosd-summary' }, [
			E('p', [
				_('Router ID') + ': ' + orDash(status.router_id) + ' \u00b7 ' +
				_('AS') + ': ' + orDash(status.asn) + ' \u00b7 ' +
				_('Version') + ': ' + orDash(status.version) + ' \u00b7 ' +
				_('Uptime') + ': ' + formatDuration(status.uptime_seconds)
			])
		]);
	},

	peerRows: function(status) {
		var peers = (status && Array.isArray(status.peers)) ? status.peers : [];

		return peers.map(function(p) {
			return [
				orDash(p.name),
				orDash(p.address),
				orDash(p.peer_asn),
				badge(orDash(p.session_state)),
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

			return [
				orDash(v.name),
				orDash(v.prefix),
				badge(orDash(v.state_name)),
				v.local_address_assigned === false
					? E('span', [ badge(orDash(v.health_name)), ' ', E('em', { 'class': 'pathosd-no-address' }, [ _('address not local') ]) ])
					: badge(orDash(v.health_name)),
				orDash(v.checks_policy),
				String(v.as_path_prepend || 0),
				list((v.communities || []).concat(v.large_communities || [])),
				drains.length ? drains.join(', ') : '-',
				orDash(v.last_transition_reason),
				E('div', { 'class': 'pathosd-actions' }, [
					E('button', {
						'class': 'btn cbi-button cbi-button-action pathosd-check',
						'data-vip': v.name,
						'click': ui.createHandlerFn(self, 'handleCheck', v.name, null)
					}, [ _('Check now') ]),
					' ',
					E('button', {
						'class': 'btn cbi-button ' + (v.drain_api ? 'cbi-button-positive' : 'cbi-button-negative') + ' pathosd-drain',
						'data-vip': v.name,
						'data-enable': v.drain_api ? '0' : '1',
						'click': ui.createHandlerFn(self, 'handleDrain', v.name, !v.drain_api)
					}, [ v.drain_api ? _('Undrain') : _('Drain') ])
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
					E('button', {
						'class': 'btn cbi-button cbi-button-action pathosd-check-one',
						'data-vip': v.name,
						'data-check': c.name,
						'click': ui.createHandlerFn(self, 'handleCheck', v.name, c.name)
					}, [ _('Check now') ])
				]);
			});
		});

		return rows;
	},

	table: function(cls, titles) {
		return E('table', { 'class': 'table ' + cls }, [
			E('tr', { 'class': 'tr table-titles' }, titles.map(function(t) {
				return E('th', { 'class': 'th' }, [ t ]);
			}))
		]);
	},

	update: function(status, svc) {
		dom.content(this.reloadNode, renderReload(status));
		dom.content(this.summaryNode, this.renderSummary(status, svc));
		cbi_update_table(this.peerTable, this.peerRows(status),
			E('em', [ status ? _('No BGP neighbors configured') : _('No data') ]));
		cbi_update_table(this.vipTable, this.vipRows(status),
			E('em', [ status ? _('No VIPs configured') : _('No data') ]));
		cbi_update_table(this.checkTable, this.checkRows(status),
			E('em', [ status ? _('No checks configured') : _('No data') ]));
	},

	refresh: function() {
		var self = this;

		return Promise.all([
			L.resolveDefault(callStatus(), null),
			L.resolveDefault(callServiceList('pathosd'), {})
		]).then(function(res) {
			self.update(res[0], res[1]);
		});
	},

	render: function(data) {
		var self = this;

		this.summaryNode = E('div', { 'class': 'pathosd-summary-box' });
		this.reloadNode = E('div', { 'class': 'pathosd-reload' });
		this.noticeNode = E('div', { 'class': 'pathosd-notice' });

		this.peerTable = this.table('pathosd-peers', [
			_('Name'), _('Address'), _('AS'), _('State'), _('Required'),
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

		poll.add(function() {
			return self.refresh();
		}, POLL_INTERVAL);

		return E('div', { 'class': 'cbi-map' }, [
			E('h2', [ _('pathosd') ]),
			E('div', { 'class': 'cbi-map-descr' }, [
				_('Health-checked VIP announcements over BGP. Refreshed every 5 seconds.')
			]),
			this.reloadNode,
			this.summaryNode,
			this.noticeNode,
			E('h3', [ _('BGP neighbors') ]),
			E('div', { 'class': 'cbi-section' }, [ this.peerTable ]),
			E('h3', [ _('VIPs') ]),
			E('div', { 'class': 'cbi-section' }, [ this.vipTable ]),
			E('h3', [ _('Checks') ]),
			E('div', { 'class': 'cbi-section' }, [ this.checkTable ])
		]);
	},

	handleSave: null,
	handleSaveApply: null,
	handleReset: null
});
