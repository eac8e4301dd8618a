//! Numbers in words a person reads: counts with their noun, dollars, and floats without the
//! noise of binary arithmetic. Cell formatting by column is in `cell.rs`.

/// `1 call`, `2 calls`, `2 fixes`, `3 entries`: a count with its noun, singular or
/// [`plural`]. The one pluralizer of track's messages.
pub fn count(n: u64, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        _ => format!("{n} {}", plural(noun)),
    }
}

/// Nouns whose plural no rule makes (their last word).
const IRREGULAR: &[(&str, &str)] = &[
    ("analysis", "analyses"),
    ("child", "children"),
    ("criterion", "criteria"),
    ("datum", "data"),
    ("index", "indices"),
    ("person", "people"),
    ("series", "series"),
];

/// The plural of `noun`, a word or a phrase whose last word is the noun (`new error`): an
/// irregular one as [`IRREGULAR`] lists it, else `-es` after a hiss (`fix`, `pass`, `match`,
/// `wish`, `buzz`), `-ies` after a consonant and `y` (`entry`, not `key`), else `-s`.
fn plural(noun: &str) -> String {
    let (head, last) = noun.rsplit_once(' ').map_or(("", noun), |(h, l)| (h, l));
    let space = if head.is_empty() { "" } else { " " };
    if let Some((_, many)) = IRREGULAR.iter().find(|(one, _)| *one == last) {
        return format!("{head}{space}{many}");
    }
    let consonant_y = last.len() > 1
        && last.ends_with('y')
        && !matches!(
            last.as_bytes()[last.len() - 2],
            b'a' | b'e' | b'i' | b'o' | b'u'
        );
    if consonant_y {
        format!("{}ies", &noun[..noun.len() - 1])
    } else if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|end| last.ends_with(end))
    {
        format!("{noun}es")
    } else {
        format!("{noun}s")
    }
}

/// A whole number with thousands separators: `1,000,000`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1,000,000 results`, `1 error`: a count with thousands separators and its noun.
pub fn counted(n: u64, noun: &str) -> String {
    count(n, noun).replacen(&n.to_string(), &thousands(n), 1)
}

/// An amount of dollars to the micro-dollar, without trailing zeros: `$0`, `$0.0125`.
pub fn dollars(usd: f64) -> String {
    let text = usd_text(usd);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("${text}")
}

/// `usd` to the millionth of a dollar (`0.314999`), as every output rounds a sum of money: in
/// millionths at [`tidy_float`]'s 15 digits first, then half away from zero, so two sums of
/// the same costs added in another order (a run's tally as its calls land, a table's
/// per-model sum) print the same, never `0.314999` beside `0.314998`, and a sum that is a half
/// millionth in decimal rounds up whatever its binary noise.
pub(crate) fn usd_text(usd: f64) -> String {
    let millionths = tidy_float(tidy_float(usd) * 1e6).round();
    // `+ 0.0`: a negative zero prints as 0.
    format!("{:.6}", millionths / 1e6 + 0.0)
}

/// `v` at the 15 significant digits a double holds exactly: what binary arithmetic adds beyond
/// them (`0.38598899999999997` for a sum of `0.385989`) is noise, not precision.
pub(crate) fn tidy_float(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let digits = 14 - v.abs().log10().floor() as i32;
    if !(0..=22).contains(&digits) {
        // Outside the range of exact powers of ten: round through text.
        return format!("{v:.14e}").parse().unwrap_or(v);
    }
    // 10^digits is exact, so the division gives the double nearest the decimal.
    let scale = 10f64.powi(digits);
    (v * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_have_thousands_separators_and_their_noun() {
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(counted(50_000, "prompt"), "50,000 prompts");
        assert_eq!(counted(1, "reply"), "1 reply");
    }

    #[test]
    fn dollars_drop_trailing_zeros() {
        assert_eq!(dollars(0.0), "$0");
        assert_eq!(dollars(0.0125), "$0.0125");
        assert_eq!(dollars(12.0), "$12");
        assert_eq!(dollars(0.0000004), "$0");
        assert_eq!(dollars(1.2345678), "$1.234568");
    }

    #[test]
    fn counts_read_as_english() {
        assert_eq!(count(1, "error"), "1 error");
        assert_eq!(count(0, "error"), "0 errors");
        assert_eq!(count(2, "cache hit"), "2 cache hits");
        assert_eq!(count(3, "reply"), "3 replies");
        assert_eq!(count(3, "key"), "3 keys");
    }

    /// One pluralizer for every message: each of the two it replaces got one of these
    /// wrong (`fixs`, `entrys`).
    #[test]
    fn plurals_of_hisses_consonant_ys_phrases_and_irregular_nouns() {
        for (one, many) in [
            ("fix", "fixes"),
            ("entry", "entries"),
            ("new error", "new errors"),
            ("pass", "passes"),
            ("match", "matches"),
            ("wish", "wishes"),
            ("day", "days"),
            ("new invalid verdict", "new invalid verdicts"),
            ("criterion", "criteria"),
            ("scored criterion", "scored criteria"),
            ("analysis", "analyses"),
            ("person", "people"),
            ("y", "ys"),
        ] {
            assert_eq!(count(2, one), format!("2 {many}"));
            assert_eq!(count(1, one), format!("1 {one}"));
        }
    }

    #[test]
    fn floats_lose_their_binary_noise_not_their_digits() {
        let noisy = 0.1 + 0.2;
        assert_eq!(noisy.to_string(), "0.30000000000000004");
        assert_eq!(tidy_float(noisy).to_string(), "0.3");
        let sum: f64 = [0.128663, 0.128663, 0.128663].iter().sum();
        assert_eq!(tidy_float(sum).to_string(), "0.385989");
        assert_eq!(tidy_float(2.0 / 3.0).to_string(), "0.666666666666667");
        assert_eq!(tidy_float(1234567.891).to_string(), "1234567.891");
        assert_eq!(
            tidy_float(1e-30 / 3.0).to_string(),
            "0.000000000000000000000000000000333333333333333"
        );
        assert_eq!(tidy_float(0.0), 0.0);
    }

    #[test]
    fn a_sum_of_money_prints_the_same_whatever_the_order_it_was_added_in() {
        let costs = [0.0644004, 0.0947542, 0.0047269];
        let forward: f64 = costs.iter().sum();
        let backward: f64 = costs.iter().rev().sum();
        // Rounded as they are, the two sums print differently (issue 45: $0.314999 beside
        // 0.314998).
        assert_ne!(format!("{forward:.6}"), format!("{backward:.6}"));
        assert_eq!(dollars(forward), dollars(backward));
        assert_eq!(usd_text(forward), usd_text(backward));
        assert_eq!(
            crate::output::cell::format_value(
                "cost_usd",
                &polars::prelude::AnyValue::Float64(forward)
            ),
            crate::output::cell::format_value(
                "cost_usd",
                &polars::prelude::AnyValue::Float64(backward)
            ),
        );
        // A half millionth rounds up, as written in decimal.
        assert_eq!(usd_text(0.0011775), "0.001178");
        assert_eq!(usd_text(0.0644004 + 0.0947542 + 0.0047269), "0.163882");
        assert_eq!(usd_text(-0.0000001), "0.000000");
    }
}
