//! procd's instance watchdog: the init script arms it (`procd_set_param
//! watchdog 1 TIMEOUT`) and tells the daemon so through the environment
//! ([`ENV`]); the owner task then asks the ubus client for a
//! `ubus call service watchdog` every [`Watchdog::every`], from its own
//! loop, so that a stalled owner stops the pings and procd replaces the
//! daemon once TIMEOUT has passed without one. Without the variable
//! (not under procd, or an init script without the watchdog) nothing is
//! sent and nothing is logged.

use std::time::{Duration, Instant};

/// `SERVICE INSTANCE TIMEOUT`: procd's names of the service and instance
/// (procd sets no variable of its own that names them) and the watchdog's
/// time in whole seconds, as given to `procd_set_param watchdog`.
pub(crate) const ENV: &str = "PATHOSD_PROCD_WATCHDOG";

/// Pings per watchdog time: one lost or late ping (a reload of a large
/// file holding the owner, a busy ubusd) leaves five more before procd acts.
const PINGS_PER_TIMEOUT: u32 = 6;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Watchdog {
    pub service: String,
    pub instance: String,
    pub timeout: Duration,
    pub every: Duration,
}

impl Watchdog {
    /// The watchdog [`ENV`] asks for; None when it is unset or empty,
    /// Err with the reason when it cannot be read.
    pub(crate) fn from_env() -> Result<Option<Watchdog>, String> {
        match std::env::var(ENV) {
            Ok(v) if !v.trim().is_empty() => Watchdog::parse(&v).map(Some),
            Ok(_) | Err(std::env::VarError::NotPresent) => Ok(None),
            Err(e) => Err(format!("{ENV}: {e}")),
        }
    }

    pub(crate) fn parse(v: &str) -> Result<Watchdog, String> {
        let bad =
            || format!("{ENV}={v:?}: expected SERVICE INSTANCE TIMEOUT (seconds, at least 1)");
        let mut words = v.split_whitespace();
        let (Some(service), Some(instance), Some(secs), None) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            return Err(bad());
        };
        // procd's own limit: a timeout of 0 is taken as its default, 30 s.
        let secs: u32 = secs.parse().ok().filter(|s| *s > 0).ok_or_else(bad)?;
        let timeout = Duration::from_secs(u64::from(secs));
        Ok(Watchdog {
            service: service.to_string(),
            instance: instance.to_string(),
            timeout,
            every: timeout / PINGS_PER_TIMEOUT,
        })
    }
}

/// The owner's side: when the next ping is due.
pub(super) struct Pinger {
    pub dog: Watchdog,
    pub link: crate::ubus::UbusHandle,
    pub next: Instant,
}

impl Pinger {
    /// Pings if due at `now` (the owner calls this on every turn of its
    /// loop, so a busy owner still pings on time).
    pub fn tick(&mut self, now: Instant) {
        if now >= self.next {
            self.link.ping_procd(&self.dog.service, &self.dog.instance);
            self.next = now + self.dog.every;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_init_scripts_value() {
        let w = Watchdog::parse("pathosd instance1 30").unwrap();
        assert_eq!(w.service, "pathosd");
        assert_eq!(w.instance, "instance1");
        assert_eq!(w.timeout, Duration::from_secs(30));
        assert_eq!(w.every, Duration::from_secs(5));
        assert_eq!(
            Watchdog::parse(" pathosd  instance1\t1 ").unwrap().every,
            Duration::from_millis(166) + Duration::from_nanos(666_666)
        );
    }

    #[test]
    fn refuses_what_procd_would_not_time() {
        for v in [
            "pathosd",
            "pathosd instance1",
            "pathosd instance1 0",
            "pathosd instance1 -3",
            "pathosd instance1 30s",
            "pathosd instance1 30 extra",
        ] {
            let e = Watchdog::parse(v).unwrap_err();
            assert!(e.contains(ENV), "{v}: {e}");
        }
    }
}
