'use strict';
'require baseclass';
'require rpc';

/*
 * A pathosd box on Status -> Overview: how many VIPs are announced,
 * pessimized or withdrawn, and how many BGP sessions are established.
 * Nothing is shown when pathosd is not on ubus (not installed, not
 * enabled, or no ACL for this user).
 */

var callStatus = rpc.declare({
	object: 'pathosd',
	method: 'status',
	expect: { '': {} }
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

		return E('table', { 'class': 'table pathosd-overview' }, [
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
		]);
	}
});
