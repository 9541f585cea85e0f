//! Hooks, as OpenWrt's hotplug does them: on each VIP transition every
//! file of the hooks directory (not a dot file) runs, in file-name order, with
//! the event in its environment. This is the pure part: which event a
//! transition makes, its environment, and the queue's policy (a full
//! queue drops the new event and counts it, so the owner never waits for
//! a hook). The runner that spawns the scripts is `pathosd::daemon::hotplug`.

use crate::vip::VipState;

/// Where hooks live unless the config says otherwise (hotplug-call's
/// `/etc/hotplug.d/<subsystem>` with subsystem `pathosd`).
pub const DEFAULT_DIR: &str = "/etc/hotplug.d/pathosd";

/// One VIP transition as the hooks see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookEvent {
    /// 1 for the daemon's first event, +1 for each after, dropped ones
    /// included: a hook sees a gap where events were dropped.
    pub seq: u64,
    pub vip: String,
    pub prefix: String,
    pub from: VipState,
    pub to: VipState,
    pub reason: String,
}

impl HookEvent {
    /// ACTION, as hotplug's: what happened to the route. `announce` when
    /// the VIP's route went out, `withdraw` when it went away, `pessimize`
    /// and `restore` for the move to and from the lower priority.
    pub fn action(&self) -> &'static str {
        use VipState::*;
        match (self.from, self.to) {
            (_, Withdrawn) => "withdraw",
            (Withdrawn, _) => "announce",
            (_, Pessimized) => "pessimize",
            (Pessimized, Announced) => "restore",
            (Announced, Announced) => "announce",
        }
    }

    /// The shell script that runs one hook (`$0`): the event's variables
    /// exported, OpenWrt's shell functions sourced as hotplug-call and
    /// procd do (where the file is: not on a host that is not OpenWrt),
    /// then the hook sourced. The values are single-quoted, so no name,
    /// prefix or reason is ever read as shell code.
    pub fn script(&self) -> String {
        let mut s = String::with_capacity(160 + self.vip.len() + self.reason.len());
        let vars: [(&str, &str); 7] = [
            ("ACTION", self.action()),
            ("VIP", &self.vip),
            ("PREFIX", &self.prefix),
            ("STATE", self.to.as_str()),
            ("FROM", self.from.as_str()),
            ("REASON", &self.reason),
            ("SEQ", &self.seq.to_string()),
        ];
        for (k, v) in vars {
            s.push_str("export ");
            s.push_str(k);
            s.push_str("='");
            s.push_str(&v.replace('\'', "'\\''"));
            s.push_str("'\n");
        }
        s.push_str("[ -f /lib/functions.sh ] && . /lib/functions.sh\n. \"$0\"\n");
        s
    }
}

/// Numbers the events; counts the ones the full queue dropped.
#[derive(Debug, Default)]
pub struct HookSeq {
    next: u64,
    dropped: u64,
}

impl HookSeq {
    /// The next event's sequence number.
    pub fn take(&mut self) -> u64 {
        self.next += 1;
        self.next
    }
    pub fn dropped(&mut self) {
        self.dropped += 1;
    }
    pub fn drops(&self) -> u64 {
        self.dropped
    }
}

/// The files hotplug-call would run: names not starting with a dot, sorted
/// bytewise (the shell's glob order in the C locale).
pub fn order(mut names: Vec<String>) -> Vec<String> {
    names.retain(|n| !n.starts_with('.'));
    names.sort_unstable();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(from: VipState, to: VipState) -> HookEvent {
        HookEvent {
            seq: 3,
            vip: "web".into(),
            prefix: "192.0.2.1/32".into(),
            from,
            to,
            reason: "check http failed".into(),
        }
    }

    #[test]
    fn actions() {
        use VipState::*;
        assert_eq!(ev(Announced, Withdrawn).action(), "withdraw");
        assert_eq!(ev(Withdrawn, Announced).action(), "announce");
        assert_eq!(ev(Withdrawn, Pessimized).action(), "announce");
        assert_eq!(ev(Announced, Pessimized).action(), "pessimize");
        assert_eq!(ev(Pessimized, Announced).action(), "restore");
    }

    #[test]
    fn script_exports_every_variable_quoted() {
        let mut e = ev(VipState::Announced, VipState::Withdrawn);
        e.reason = "it's down; $(reboot)".into();
        assert_eq!(
            e.script(),
            "export ACTION='withdraw'\n\
             export VIP='web'\n\
             export PREFIX='192.0.2.1/32'\n\
             export STATE='withdrawn'\n\
             export FROM='announced'\n\
             export REASON='it'\\''s down; $(reboot)'\n\
             export SEQ='3'\n\
             [ -f /lib/functions.sh ] && . /lib/functions.sh\n\
             . \"$0\"\n"
        );
    }

    #[test]
    fn order_is_bytewise_without_dot_files() {
        let got = order(vec![
            "20-b".into(),
            ".hidden".into(),
            "10-a".into(),
            "B".into(),
        ]);
        assert_eq!(got, ["10-a", "20-b", "B"]);
    }

    #[test]
    fn seq_counts_drops_in_the_numbering() {
        let mut s = HookSeq::default();
        assert_eq!(s.take(), 1);
        s.dropped();
        assert_eq!(s.take(), 2);
        assert_eq!(s.drops(), 1);
    }
}
