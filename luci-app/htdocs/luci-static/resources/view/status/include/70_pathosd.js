'use strict';
'require baseclass';
'require rpc';
'require pathosd.common as common';

/*
 * A pathosd box on Status -> Overview: how many VIPs are announced,
 * pessimized or withdrawn, and how many BGP sessions are established; while
 * pathosd is not on ubus, why (disabled, stopped, refused or crashed), so a
 * crash is seen here. A reload the daemon rejected, or applied only in part,
 * is shown until a later one is applied: the old configuration (or part of
 * it) still runs. Nothing is shown to a user
 * whose ACL does not include pathosd.
 */

/* limit 0: the counts over all VIPs (vip_counts), no VIP list, whatever
 * the number of VIPs. reject: a ubus error is no status, not {}. */
var callStatus = rpc.declare({
	object: 'pathosd',
	method: 'status',
	params: [ 'limit' ],
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

function row(cls, title, content) {
	return E('tr', { 'class': 'tr' + (cls ? ' ' + cls : '') }, [
		E('td', { 'class': 'td left', 'width': '33%' }, [ title ]),
		E('td', { 'class': 'td left' }, content)
	]);
}

return baseclass.extend({
	title: _('pathosd'),

	load: function() {
		return Promise.all([
			callStatus(0).then(function(st) { return { status: st }; },
				function(err) { return { error: common.callError(err) }; }),
			L.resolveDefault(callServiceList('pathosd'), {}),
			common.enabled()
		]);
	},

	render: function(data) {
		var res = data[0], status = res.status, st;
		var peers = (status && Array.isArray(status.peers)) ? status.peers : [];
		var counts = { announced: 0, pessimized: 0, withdrawn: 0 };
		var up = 0, rows = [], r, n;

		if (!status) {
			/* No access (or no such page for this user): no box. */
			if (res.error && res.error.denied)
				return null;
			/* On ubus but no answer: say so, not why it would not be on ubus. */
			st = (res.error && res.error.ubus !== 4)
				? { state: 'error', text: _('pathosd did not answer the status request: %s').replace('%s', res.error.text) }
				: common.serviceState(data[2], data[1]);
			return E('div', {}, [
				common.style(),
				E('table', { 'class': 'table pathosd-overview' }, [
					row('pathosd-down', _('Service'), [ common.badge(st.state), ' ', st.text ])
				])
			]);
		}

		if (status.vip_counts != null)
			counts = status.vip_counts;
		else
			(Array.isArray(status.vips) ? status.vips : []).forEach(function(v) {
				if (counts[v.state_name] != null)
					counts[v.state_name]++;
			});
		peers.forEach(function(p) {
			if (p.session_state === 'established')
				up++;
		});

		r = status.last_reload;
		if (r && r.result === 'partially_applied') {
			n = Array.isArray(r.errors) ? r.errors.length : 0;
			rows.push(row('pathosd-reload-partial', _('Configuration'), [
				common.badge('partially_applied', _('partially applied')), ' ',
				N_(n, 'the last reload applied all but %d setting; see Services \u2192 pathosd.',
					'the last reload applied all but %d settings; see Services \u2192 pathosd.')
					.replace('%d', n)
			]));
		}
		if (r && r.result === 'rejected') {
			n = Array.isArray(r.errors) ? r.errors.length : 0;
			rows.push(row('pathosd-reload-rejected', _('Configuration'), [
				common.badge('rejected'), ' ',
				N_(n, 'the last reload failed (%d error); the previous configuration still runs. See Services \u2192 pathosd.',
					'the last reload failed (%d errors); the previous configuration still runs. See Services \u2192 pathosd.')
					.replace('%d', n)
			]));
		}

		return E('div', {}, [ common.style(), E('table', { 'class': 'table pathosd-overview' }, rows.concat([
			row(null, _('VIPs'), [
				_('%d announced, %d pessimized, %d withdrawn')
					.replace('%d', counts.announced || 0)
					.replace('%d', counts.pessimized || 0)
					.replace('%d', counts.withdrawn || 0)
			]),
			row(null, _('BGP sessions'), [
				_('%d of %d established').replace('%d', up).replace('%d', peers.length)
			])
		])) ]);
	}
});
