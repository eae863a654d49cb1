//! An extra sample's CPU weight (`cpu.shares`) from what it did over the last interval: the
//! lowest once it computes, the default back once it goes quiet, a probe before a freeze.

use super::FREEZE_CPU_SHARE;

/// `cpu.shares` (v1; v2 maps them to `cpu.weight`) of a primary sample (the kernel's default) and of an extra one
/// (about 1.5% of a core against one primary that wants it). Not the kernel's minimum, 2:
/// there a sleeping thread's wake-up waited 0.1 to 0.3 s beside busy primaries (on 6.18's
/// EEVDF scheduler; 16 waits milliseconds, bench/extra-weight.py), and a test that times
/// its own sleeps failed (BigCodeBench/823 wants three 0.1-s sleeps within 0.05 s).
pub(super) const PRIMARY_CPU_SHARES: u32 = 1024;
pub(super) const EXTRA_CPU_SHARES: u32 = 16;
/// Share of a core under which a shielded extra with runnable threads counts as starved.
const STARVED_CPU_SHARE: f64 = 0.05;

/// An extra sample's CPU weight and what the governor learned of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Weighing {
    pub(super) shares: u32,
    pub(super) probing: bool,
    pub(super) computes: bool,
}

/// What one measurement of a shielded extra sample showed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Seen {
    /// Cores used over the interval (reaped children included).
    pub(super) used: f64,
    /// Threads runnable at this measurement, and at the one before.
    pub(super) runnable: bool,
    pub(super) was_runnable: bool,
}

/// An extra sample's next weight, and whether it is to be frozen as starved.
///
/// It drops to the lowest weight once it used [`FREEZE_CPU_SHARE`] of a core at the
/// default one, and gets the default back once it went quiet (no thread runnable at two
/// measurements). A sample that mostly sleeps so keeps the default weight, and its
/// wake-ups are served at once.
///
/// Starved at the lowest weight (threads runnable at two measurements, almost no CPU),
/// it is not frozen at once: it gets the default weight back for one interval (a probe).
/// A test that starts a server thread, sleeps a second and connects (BigCodeBench/1040)
/// needs a few milliseconds of CPU for that thread within the second; at the lowest weight
/// beside busy primaries it can wait for them for seconds, and frozen, its main thread's
/// sleep runs out meanwhile (a freeze stops the sample, not the clocks it reads), so it
/// connects before the server listens: `ConnectionRefusedError` for a correct answer. Only
/// a sample that is still runnable after a probe in which it used its share of a core
/// computes, and from then on it is frozen when starved (its clock then stops exactly),
/// until it goes quiet: then it starts over (a server that computed at its start and was
/// frozen later missed its test's window all the same). A CPU-bound extra so takes at most
/// one more interval at the default weight from the primaries per quiet spell.
pub(super) fn next_weight(w: Weighing, seen: Seen) -> (Weighing, bool) {
    let busy = seen.used >= FREEZE_CPU_SHARE;
    let mut next = w;
    match w.shares {
        PRIMARY_CPU_SHARES if w.probing => {
            if busy && seen.runnable {
                next = Weighing {
                    shares: EXTRA_CPU_SHARES,
                    probing: false,
                    computes: true,
                };
            } else if !seen.runnable {
                next.probing = false; // its burst is over: it waits, at the default weight
            }
        }
        PRIMARY_CPU_SHARES if busy => next.shares = EXTRA_CPU_SHARES,
        EXTRA_CPU_SHARES => {
            let quiet = !seen.runnable && !seen.was_runnable;
            let starved = seen.runnable && seen.was_runnable && seen.used < STARVED_CPU_SHARE;
            if quiet && !busy {
                // It starts over: what it computed before says nothing about its next wake-up
                // (a server that computed at its start, frozen when starved, misses its test's
                // fixed sleep as surely as one never probed).
                next = Weighing {
                    shares: PRIMARY_CPU_SHARES,
                    probing: false,
                    computes: false,
                };
            } else if starved && !w.computes {
                next.shares = PRIMARY_CPU_SHARES;
                next.probing = true;
            } else if starved {
                return (next, true);
            }
        }
        _ => {}
    }
    (next, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_starved_extra_gets_one_probe_at_the_default_weight_before_it_is_frozen() {
        let at = |shares, probing, computes| Weighing {
            shares,
            probing,
            computes,
        };
        let seen = |used, runnable, was_runnable| Seen {
            used,
            runnable,
            was_runnable,
        };
        let (low, default) = (EXTRA_CPU_SHARES, PRIMARY_CPU_SHARES);
        // A burst at the default weight: the lowest.
        let w = at(default, false, false);
        assert_eq!(
            next_weight(w, seen(0.4, true, true)),
            (at(low, false, false), false)
        );
        // Starved there: the default weight back, not frozen.
        let w = at(low, false, false);
        let probe = at(default, true, false);
        assert_eq!(next_weight(w, seen(0.0, true, true)), (probe, false));
        // A server thread that only had its start to finish waits again: it stays at the
        // default weight and is never frozen for that starvation.
        assert_eq!(
            next_weight(probe, seen(0.1, false, true)),
            (at(default, false, false), false)
        );
        // Still waiting for a core even at the default weight: the probe goes on.
        assert_eq!(next_weight(probe, seen(0.01, true, true)), (probe, false));
        // It took its share and wants more: it computes, so the lowest weight again...
        let computes = at(low, false, true);
        assert_eq!(next_weight(probe, seen(0.3, true, true)), (computes, false));
        // ...and starved from then on, it is frozen (its clock stops exactly).
        assert_eq!(
            next_weight(computes, seen(0.0, true, true)),
            (computes, true)
        );
        // Quiet at the lowest weight: the default again, and it starts over (starved later,
        // it is probed again before it may be frozen).
        assert_eq!(
            next_weight(computes, seen(0.0, false, false)),
            (at(default, false, false), false)
        );
        // Runnable at one measurement only: neither quiet nor starved.
        assert_eq!(next_weight(w, seen(0.0, true, false)), (w, false));
    }
}
