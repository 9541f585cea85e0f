'use strict';
'require view';
'require rpc';
'require poll';
'require ui';
'require dom';

/*
 * Live state of pathosd from ubus ("ubus call pathosd status"), refreshed
 * every 5 s: BGP peers, VIPs with their state, and every check of every VIP.
 * Drain and "check now" call the daemon's ubus methods; the rpcd ACL in
 * luci-app-pathosd.json grants them to the write role only.
 */

var callStatus = rpc.declare({
	object: 'pathosd',
	method: 'status',
	expect: { '': {} }
});

var callCheck = rpc.declare({
	object: 'pathosd',
	method: 'check',
	params: [ 'vip', 'check' ],
	expect: { '': {} }
});

var callDrain = rpc.declare({
	object: 'pathosd',
	method: 'drain',
	params: [ 'vip', 'enable' ],
	expect: { '': {} }
});

var callServiceList = rpc.declare({
	object: 'service',
	method: 'list',
	params: [ 'name' ],
	expect: { '': {} }
});

var POLL_INTERVAL = 5;

var STATE_COLORS = {
	announced: '#2e7d32',
	pessimized: '#ef6c00',
	withdrawn: '#c62828',
	established: '#2e7d32',
	healthy: '#2e7d32',
	unhealthy: '#c62828'
};

function badge(text) {
	var color = STATE_COLORS[text] || '#616161';

	return E('span', {
		'class': 'label pathosd-badge',
		'data-state': text,
		'style': 'color:#fff;background:' + color + ';padding:0 .5em;border-radius:3px'
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

/* The service's procd state, for the message shown when ubus has no pathosd. */
function serviceRunning(svc) {
	var inst = (svc && svc.pathosd && svc.pathosd.instances) ? svc.pathosd.instances : {};

	for (var k in inst)
		if (inst[k] && inst[k].running)
			return true;

	return false;
}

return view.extend({
	load: function() {
		return Promise.all([
			L.resolveDefault(callStatus(), null),
			L.resolveDefault(callServiceList('pathosd'), {})
		]);
	},

	/* Runs a ubus call from a button, then refreshes the tables at once. */
	handleAction: function(promise, what) {
		var self = this;

		return promise.then(function(reply) {
			ui.addNotification(null, E('p', [ what + ': ' + self.summarize(reply) ]), 'info');
			return self.refresh();
		}).catch(function(err) {
			ui.addNotification(null, E('p', [ what + ': ' + (err && err.message ? err.message : String(err)) ]), 'danger');
		});
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
			return E('div', { 'class': 'alert-message warning pathosd-down' }, [
				serviceRunning(svc)
					? _('pathosd runs but is not (yet) registered on ubus. Check the log: logread -e pathosd')
					: _('pathosd is not running. Enable it under Configuration (option enabled) and check the log: logread -e pathosd')
			]);
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
					orDash(c.last_check_time),
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
			this.summaryNode,
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
