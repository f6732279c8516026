//! The report's findings in words: the text report's `Finding:` lines, the Loss tab, and
//! the JSON's `finding` and `fit.suppressed` strings, made from their numbers here.

use crate::sinks::analysis::{Amplification, Baseline, BurstFinding, Finding};
use std::fmt;

impl fmt::Display for Amplification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let observed = self.lost as f64 / self.seen as f64;
        let against = match self.against {
            Baseline::SingleDatagrams => "single datagrams",
            Baseline::SingleFragments => "single fragments",
        };
        write!(
            f,
            "packets of {}+ fragments were lost {:.1}× as often as {against} ({:.1}%, {} of {} packets, 95% CI {:.1}–{:.1}%, vs {:.1}% of {}); keep them under the MTU budget or send them reliably",
            self.from,
            observed / self.base,
            observed * 100.0,
            self.lost,
            self.seen,
            self.low * 100.0,
            self.high * 100.0,
            self.base * 100.0,
            self.base_n
        )
    }
}

impl fmt::Display for BurstFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "oversize packets cluster before loss bursts: {:.1}% of the {} datagrams in the second before a burst are over the budget, against {:.1}% of {} otherwise",
            self.before_share * 100.0,
            self.before_count,
            self.rest_share * 100.0,
            self.rest_count
        )
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::Amplification(a) => a.fmt(f),
            Finding::Bursts(b) => b.fmt(f),
        }
    }
}

// JSON carries each as its sentence, as it always has.
as_sentence!(Amplification, BurstFinding, Finding);
