'use strict';
'require baseclass';
'require rpc';

/*
 * A pathosd box on Status -> Overview: how many VIPs are announced,
 * pessimized or withdrawn, and how many BGP sessions are established.
 * Nothing is shown when pathosd is not on ubus (not installed, not
 * enabled, or no ACL for this user). A reload the daemon rejected is shown
 * until a later one is applied: the old configuration still runs.
 */

/* reject: a ubus error (pathosd not registered) is no status, not {}. */
var callStatus = rpc.declare({
	object: 'pathosd',
	method: 'status',
	expect: { '': {} },
	reject: true
});

return baseclass.extend({
	title: _('pathosd'),

	load: function() {
		return L.resolveDefault(callStatus(), null);
	},

	render: function(status) {
		var counts = { announced: 0, pessimized: 0, withdrawn: 0 };
		var peers = (status && Array.isArray(status.peers)) ? status.peers : [];
		var up = 0;

		if (!status || !Array.isArray(status.vips))
			return null;

		status.vips.forEach(function(v) {
			if (counts[v.state_name] != null)
				counts[v.state_name]++;
		});
		peers.forEach(function(p) {
			if (p.session_state === 'established')
				up++;
		});

		var rows = [];
		var r = status.last_reload;

		if (r && r.result === 'rejected') {
			rows.push(E('tr', { 'class': 'tr pathosd-reload-rejected' }, [
				E('td', { 'class': 'td left', 'width': '33%' }, [ _('Configuration') ]),
				E('td', { 'class': 'td left' }, [
					E('span', { 'class': 'label important' }, [ _('rejected') ]), ' ',
					_('the last reload failed (%d errors); the previous configuration still runs. See Services \u2192 pathosd.')
						.replace('%d', Array.isArray(r.errors) ? r.errors.length : 0)
				])
			]));
		}

		return E('table', { 'class': 'table pathosd-overview' }, rows.concat([
			E('tr', { 'class': 'tr' }, [
				E('td', { 'class': 'td left', 'width': '33%' }, [ _('VIPs') ]),
				E('td', { 'class': 'td left' }, [
					_('%d announced, %d pessimized, %d withdrawn')
						.replace('%d', counts.announced)
						.replace('%d', counts.pessimized)
						.replace('%d', counts.withdrawn)
				])
			]),
			E('tr', { 'class': 'tr' }, [
				E('td', { 'class': 'td left', 'width': '33%' }, [ _('BGP sessions') ]),
				E('td', { 'class': 'td left' }, [
					_('%d of %d established').replace('%d', up).replace('%d', peers.length)
				])
			])
		]));
	}
});
