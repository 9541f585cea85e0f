'use strict';
'require baseclass';
'require rpc';
'require ui';

/*
 * What the pathosd views share ('require pathosd.common as common'): the
 * state badges, why the daemon is not on ubus, the text of a failed ubus
 * call, and the check of the staged configuration before any apply.
 */

/*
 * Badge colours from the theme. luci-theme-bootstrap (current, with its CSS
 * variables) styles 'label success' green and 'label warning' orange, but
 * 'label important' and 'label notice' in its primary colour (blue): no
 * label style of the theme is red. A bad state gets our own CSS class: the
 * theme's darkest error colour (light and dark mode) with white text, which
 * the 9.75px bold labels need at 4.5:1 (WCAG AA: 5.7:1 on #d00000, 5.4:1 on
 * the dark mode's #b14946; the theme's brightest red, --error-color-high,
 * gave 3.9:1 in dark mode and 4.0:1 in light), or the old bootstrap red
 * (5.2:1) where the theme has no such variable. A BGP session that is not up
 * is red, one that is being opened orange.
 */
var STATE_CLASSES = {
	announced: 'success',
	established: 'success',
	healthy: 'success',
	pessimized: 'warning',
	withdrawn: 'pathosd-bad',
	unhealthy: 'pathosd-bad',
	idle: 'pathosd-bad',
	connect: 'pathosd-bad',
	active: 'pathosd-bad',
	opensent: 'warning',
	openconfirm: 'warning',
	/* BFD (RFC 5880): up green, coming up orange, down red; AdminDown is
	 * a session held down on purpose, which takes no BGP session down. */
	up: 'success',
	init: 'warning',
	down: 'pathosd-bad',
	admin_down: 'warning',
	stopped: 'pathosd-bad',
	refused: 'pathosd-bad',
	crashed: 'pathosd-bad',
	running: 'warning',
	error: 'pathosd-bad',
	rejected: 'pathosd-bad',
	partially_applied: 'warning'
};

/* The red badge; filter rows that wrap on a narrow screen instead of being
 * cut off (the theme's .cbi-section-create is an inline-flex row). */
var CSS = '.label.pathosd-bad { background-color: var(--error-color-low, #c43c35); color: #fff; }\n' +
	'.cbi-section-create.pathosd-filters { display: flex; flex-wrap: wrap; max-width: 100%; }\n' +
	'.pathosd-filters > * { min-width: 0; max-width: 100%; }';

/* The staged /etc/config/pathosd checked by the daemon's own rules: pathosd's
 * rpcd plugin (/usr/libexec/rpcd/pathosd-staged, in the pathosd package) runs
 * "pathosd validate" on what uci apply would commit for this session. */
var callStagedValidate = rpc.declare({
	object: 'pathosd-staged',
	method: 'validate',
	expect: { '': {} },
	reject: true
});

/* main's enabled alone: the whole package (uci.load) can be over the 1 MiB
 * of one ubus reply, past which rpcd exits and every LuCI session is lost. */
var callEnabled = rpc.declare({
	object: 'uci',
	method: 'get',
	params: [ 'config', 'section', 'option' ],
	expect: { value: '' },
	reject: true
});

/* Whether this session has staged pathosd changes (rpcd uci changes). */
var callUciChanges = rpc.declare({
	object: 'uci',
	method: 'changes',
	params: [ 'config' ],
	expect: { changes: [] },
	reject: true
});

function isOn(v) {
	return v === '1' || v === 'true' || v === 'yes' || v === 'on' || v === 'enabled';
}

function isOff(v) {
	return v === '0' || v === 'false' || v === 'no' || v === 'off' || v === 'disabled';
}

/*
 * A failed rpc call in words. rpc.js rejects with "RPC call to OBJ/METHOD
 * failed with ubus code N: TEXT" or "... failed with error N: TEXT" (the
 * JSON-RPC layer: -32002 is the session's ACL), each followed by JS stack
 * frames; none of that is for the user. ubus is the ubus status (4: not
 * found, also when pathosd is not on ubus) or null.
 *
 * Which reply says "pathosd is not on ubus" depends on the endpoint:
 * LuCI's own (admin/ubus) answers ubus status 4, but uhttpd's (/ubus,
 * which LuCI uses wherever uhttpd-mod-ubus is installed, as on a default
 * OpenWrt) answers the JSON-RPC error -32000 "Object not found", before
 * any ACL check. Both are taken as 4 with absent set, so the pages say
 * why pathosd is not there (stopped, disabled, crashed) instead of
 * showing the error code.
 */
function callError(err) {
	var msg = String((err && err.message != null) ? err.message : err).split('\n')[0];
	var m = /failed with ubus code (\d+)/.exec(msg);
	var j = /failed with error (-?\d+)/.exec(msg);
	var code = m ? +m[1] : null;
	var texts = {
		2: _('pathosd refused the request (invalid arguments)'),
		3: _('this pathosd does not know the request (an older version?)'),
		4: _('not found'),
		5: _('no answer'),
		6: _('permission denied'),
		7: _('pathosd did not answer in time'),
		9: _('pathosd is busy or refused it (a run of these checks is still going, or too many requests): try again'),
		10: _('the connection to ubus was lost')
	};

	if (code != null)
		return { ubus: code, text: texts[code] || _('ubus error %d').replace('%d', code) };

	if (j && +j[1] === -32000)
		return { ubus: 4, absent: true, text: _('pathosd is not on ubus') };

	if (j && +j[1] === -32002)
		return { ubus: null, denied: true, text: _('access denied: this LuCI login may not do that (luci-app-pathosd write access is needed)') };

	return { ubus: null, text: msg.replace(/^RPC call to \S+ failed with /, '') || _('failed') };
}

/* Why the plugin could not check: in words, with what to do. */
function pluginTrouble(err) {
	var e = callError(err);

	if (e.ubus === 4)
		return _('rpcd has not loaded pathosd\'s plugin (ubus pathosd-staged, installed with pathosd): run /etc/init.d/rpcd reload, or reinstall pathosd.');
	if (e.denied)
		return _('this LuCI login may not run the check (ubus pathosd-staged validate, in luci-app-pathosd\'s ACL).');
	if (e.ubus === 5)
		return _('pathosd validate gave no answer (it failed or was stopped, for example out of memory).');
	return _('the check failed: %s').replace('%s', e.text);
}

/*
 * Whether the staged configuration may be applied: { ok: true }, or why
 * not, { errors: [ daemon errors ] } or { reason: text }. Nothing of pathosd
 * staged: ok (uci apply leaves the file as it is).
 */
function checkStaged() {
	return callStagedValidate().then(function(r) {
		if (r.staged === false || r.valid === true)
			return { ok: true };
		if (r.valid === false && Array.isArray(r.errors))
			return { errors: r.errors };
		return { reason: r.error ? _('the check failed: %s').replace('%s', r.error) : _('the check gave an unexpected answer.') };
	}, function(err) {
		var reason = pluginTrouble(err);

		return callUciChanges('pathosd').then(function(changes) {
			return changes.length ? { reason: reason } : { ok: true };
		}, function() {
			return { reason: reason };
		});
	});
}

return baseclass.extend({
	isOn: isOn,
	isOff: isOff,
	callError: callError,
	checkStaged: checkStaged,
	pluginTrouble: pluginTrouble,

	/* pathosd.main.enabled as staged, '' when unset or unreadable. */
	enabled: function() {
		return L.resolveDefault(callEnabled('pathosd', 'main', 'enabled'), '');
	},

	/* A LuCI label for a state word (data-state carries the word). */
	badge: function(state, label) {
		var cls = STATE_CLASSES[state];

		return E('span', {
			'class': 'label pathosd-badge' + (cls ? ' ' + cls : ''),
			'data-state': state
		}, [ label != null ? label : state ]);
	},

	/* The rules the theme lacks, for the pages that use them. */
	style: function() {
		return E('style', {}, [ CSS ]);
	},

	/*
	 * A refused apply in words: the daemon's errors (each through
	 * describe(error) when given, else its text), or why it could not be
	 * checked.
	 */
	refusal: function(res, describe) {
		return E('div', { 'class': 'alert-message danger pathosd-invalid' }, [
			E('h4', [ res.errors ? _('Not applied: pathosd rejects this configuration')
				: _('Not applied: pathosd could not check this configuration') ]),
			res.errors ? E('ul', res.errors.map(function(e) {
				return E('li', { 'title': e.text }, [ describe ? describe(e) : String(e.text) ]);
			})) : E('p', [ res.reason ]),
			E('p', [ _('Nothing was applied; the changes stay saved. Correct them and Save & Apply again, or revert them under Unsaved Changes.') ])
		]);
	},

	/*
	 * Every apply while a pathosd page is loaded, the page's Save & Apply
	 * and the header's "Unsaved Changes" dialog alike (both call
	 * ui.changes.apply), first has the staged pathosd configuration checked
	 * by the daemon's rules; a refusal is shown as a dialog, and given to
	 * the page's onRefused(res, describe).
	 */
	guardApply: function(onRefused, describe) {
		var changes = ui.changes, self = this, apply;

		changes.pathosdRefused = onRefused;
		changes.pathosdDescribe = describe;
		if (changes.pathosdGuard)
			return;
		changes.pathosdGuard = true;
		apply = changes.apply;
		changes.apply = function() {
			var ctx = this, args = arguments;

			return checkStaged().then(function(res) {
				if (res.ok)
					return apply.apply(ctx, args);
				if (changes.pathosdRefused)
					changes.pathosdRefused(res);
				ui.showModal(_('Not applied'), [
					self.refusal(res, changes.pathosdDescribe),
					E('div', { 'class': 'right' }, [
						E('button', { 'class': 'cbi-button', 'click': ui.hideModal }, [ _('Dismiss') ])
					])
				]);
			});
		};
	},

	/*
	 * Why pathosd is not on ubus, from the init switch (uci
	 * pathosd.main.enabled) and procd (ubus service list). procd forgets a
	 * service that /etc/init.d/pathosd stop deleted, or that was never
	 * started since boot; a start the init script refused leaves the service
	 * with its triggers but no instance; a crash leaves an instance that does
	 * not run.
	 */
	serviceState: function(enabled, svc) {
		var s = (svc && svc.pathosd) ? svc.pathosd : null;
		var inst = (s && s.instances) ? s.instances : {};
		var k, i;

		if (!isOn(enabled))
			return { state: 'disabled', text: _('pathosd is disabled: tick Enabled under Configuration and Save & Apply.') };

		if (!s)
			return { state: 'stopped', text: _('pathosd is enabled but its service is not running: it was stopped (/etc/init.d/pathosd stop) or has not been started since boot. Start it with /etc/init.d/pathosd start.') };

		if (!Object.keys(inst).length)
			return { state: 'refused', text: _('pathosd is enabled but the init script did not start it: it refused the configuration. See logread -e pathosd, fix it under Configuration and Save & Apply.') };

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
});
