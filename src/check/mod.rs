//! Health checks: probes, rise/fall hysteresis, checks policy and the scheduler.
