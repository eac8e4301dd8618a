//! Hand-written SVG: a writer of marks with their tooltips, linear scales with round ticks,
//! axes, legends and the heatmap's colour scale. Charts (`charts.rs`) are built from these.
//!
//! Colours come from CSS classes (`s0`…`s7`, set per light or dark theme in the stylesheet),
//! text is `currentColor`, and every mark can carry a `<title>`: its numbers as text.

use std::fmt::Write as _;

use super::html::escape;

/// The width of every chart, in SVG units (the page scales it down when narrow).
pub const WIDTH: f64 = 900.0;

/// Series colours before they repeat (classes `s0`…`s7`).
pub const SERIES_COLOURS: usize = 8;

/// Writes one `<svg>` element: its accessible title and description first, then marks.
#[derive(Debug)]
pub struct Svg {
    out: String,
}

/// Where a text's anchor is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn as_str(self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::Middle => "middle",
            Self::End => "end",
        }
    }
}

/// A coordinate with one decimal: enough on screen, and small files.
fn c(v: f64) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    let text = format!("{v:.1}");
    text.strip_suffix(".0").map_or(text.clone(), str::to_owned)
}

impl Svg {
    /// Starts a chart `width` × `height` named `title` (its accessible name), described by
    /// `description`; `id` makes the title's and description's ids unique in the page.
    pub(crate) fn new(id: &str, width: f64, height: f64, title: &str, description: &str) -> Self {
        let id = escape(id);
        let mut out = String::with_capacity(4096);
        let _ = write!(
            out,
            "<svg class=\"chart\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" \
             aria-labelledby=\"{id}-title {id}-desc\"><title id=\"{id}-title\">{}</title>\
             <desc id=\"{id}-desc\">{}</desc>",
            escape(title),
            escape(description),
            w = c(width),
            h = c(height),
        );
        Self { out }
    }

    /// A rectangle of CSS class `class`, with a tooltip when `tip` is not empty.
    pub(crate) fn rect(&mut self, x: f64, y: f64, width: f64, height: f64, class: &str, tip: &str) {
        let _ = write!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"{}\"",
            c(x),
            c(y),
            c(width.max(0.0)),
            c(height.max(0.0)),
            escape(class)
        );
        self.close_with_tip("rect", tip);
    }

    /// A rectangle filled with an explicit colour (heatmap cells).
    pub(crate) fn filled_rect(&mut self, x: f64, y: f64, size: (f64, f64), fill: &str, tip: &str) {
        let _ = write!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"",
            c(x),
            c(y),
            c(size.0.max(0.0)),
            c(size.1.max(0.0)),
            escape(fill)
        );
        self.close_with_tip("rect", tip);
    }

    /// A line of CSS class `class`.
    pub(crate) fn line(&mut self, from: (f64, f64), to: (f64, f64), class: &str) {
        let _ = write!(
            self.out,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" class=\"{}\"/>",
            c(from.0),
            c(from.1),
            c(to.0),
            c(to.1),
            escape(class)
        );
    }

    /// A circle of CSS class `class`, with a tooltip when `tip` is not empty.
    pub(crate) fn circle(&mut self, centre: (f64, f64), radius: f64, class: &str, tip: &str) {
        let _ = write!(
            self.out,
            "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" class=\"{}\"",
            c(centre.0),
            c(centre.1),
            c(radius),
            escape(class)
        );
        self.close_with_tip("circle", tip);
    }

    /// A connected line through `points`.
    pub(crate) fn polyline(&mut self, points: &[(f64, f64)], class: &str) {
        let joined: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{},{}", c(*x), c(*y)))
            .collect();
        let _ = write!(
            self.out,
            "<polyline points=\"{}\" class=\"{}\"/>",
            joined.join(" "),
            escape(class)
        );
    }

    /// Text at (`x`, `y`) anchored at `anchor`; `class` may be empty.
    pub(crate) fn text(&mut self, at: (f64, f64), anchor: Anchor, class: &str, content: &str) {
        self.text_rotated(at, anchor, class, content, 0.0);
    }

    /// Text turned by `degrees` around its anchor (long column labels).
    pub(crate) fn text_rotated(
        &mut self,
        at: (f64, f64),
        anchor: Anchor,
        class: &str,
        content: &str,
        degrees: f64,
    ) {
        let _ = write!(
            self.out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"{}\"",
            c(at.0),
            c(at.1),
            anchor.as_str()
        );
        if !class.is_empty() {
            let _ = write!(self.out, " class=\"{}\"", escape(class));
        }
        if degrees != 0.0 {
            let _ = write!(
                self.out,
                " transform=\"rotate({} {} {})\"",
                c(degrees),
                c(at.0),
                c(at.1)
            );
        }
        let _ = write!(self.out, ">{}</text>", escape(content));
    }

    /// A label that is cut to `max_chars`, its full text in a tooltip when cut.
    pub(crate) fn label(
        &mut self,
        at: (f64, f64),
        anchor: Anchor,
        content: &str,
        max_chars: usize,
    ) {
        let shown = super::html::truncate(content, max_chars);
        if shown == content {
            self.text(at, anchor, "", content);
        } else {
            let _ = write!(self.out, "<g><title>{}</title>", escape(content));
            self.text(at, anchor, "", &shown);
            self.out.push_str("</g>");
        }
    }

    fn close_with_tip(&mut self, element: &str, tip: &str) {
        if tip.is_empty() {
            self.out.push_str("/>");
        } else {
            let _ = write!(self.out, "><title>{}</title></{element}>", escape(tip));
        }
    }

    /// Ends the element and returns its text.
    pub(crate) fn finish(mut self) -> String {
        self.out.push_str("</svg>");
        self.out
    }
}

/// A linear map from a domain of values to a range of coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Linear {
    pub domain: (f64, f64),
    pub range: (f64, f64),
}

impl Linear {
    /// The scale from `domain` to `range`; an empty domain is widened so it maps somewhere.
    pub(crate) fn new(domain: (f64, f64), range: (f64, f64)) -> Self {
        let (low, high) = domain;
        let domain = if (high - low).abs() < f64::EPSILON || !(high - low).is_finite() {
            (low - 1.0, low + 1.0)
        } else {
            domain
        };
        Self { domain, range }
    }

    /// The coordinate of `value` (values outside the domain are clamped to it).
    pub(crate) fn at(&self, value: f64) -> f64 {
        let (d0, d1) = self.domain;
        let t = ((value - d0) / (d1 - d0)).clamp(0.0, 1.0);
        self.range.0 + t * (self.range.1 - self.range.0)
    }

    /// About `count` round values (1, 2 or 5 times a power of ten apart) inside the domain,
    /// and their step.
    pub(crate) fn ticks(&self, count: usize) -> (Vec<f64>, f64) {
        let (low, high) = (
            self.domain.0.min(self.domain.1),
            self.domain.0.max(self.domain.1),
        );
        let step = nice_step((high - low) / count.max(1) as f64);
        let first = (low / step).ceil() as i64;
        let last = (high / step + 1e-9).floor() as i64;
        let ticks = (first..=last).map(|k| k as f64 * step).collect();
        (ticks, step)
    }
}

/// The round step (1, 2 or 5 × 10^k) nearest above `raw`.
fn nice_step(raw: f64) -> f64 {
    if !raw.is_finite() || raw <= 0.0 {
        return 1.0;
    }
    let power = 10f64.powf(raw.log10().floor());
    let fraction = raw / power;
    let nice = if fraction <= 1.0 {
        1.0
    } else if fraction <= 2.0 {
        2.0
    } else if fraction <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * power
}

/// A tick's text: as many decimals as its step needs.
pub(crate) fn tick_text(value: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    let text = format!("{value:.decimals$}");
    if text.starts_with('-') && text.trim_start_matches(['-', '0', '.']).is_empty() {
        text[1..].to_owned()
    } else {
        text
    }
}

/// The upper end of an axis that starts at 0 and must show `max`: `max` plus a little room.
pub(crate) fn headroom(max: f64) -> f64 {
    if max.is_finite() && max > 0.0 {
        max * 1.08
    } else {
        1.0
    }
}

/// A horizontal value axis at height `y`, gridlines up to `top`, and its label below.
pub(crate) fn x_axis(svg: &mut Svg, scale: &Linear, y: f64, top: f64, label: &str) {
    let (ticks, step) = scale.ticks(6);
    draw_x_axis(svg, scale, (y, top), label, (ticks, step));
}

/// [`x_axis`] for counts: only whole ticks.
pub(crate) fn count_axis(svg: &mut Svg, scale: &Linear, y: f64, top: f64, label: &str) {
    let (ticks, step) = scale.ticks(6);
    let whole = ticks.into_iter().filter(|t| t.fract() == 0.0).collect();
    draw_x_axis(svg, scale, (y, top), label, (whole, step.max(1.0)));
}

fn draw_x_axis(
    svg: &mut Svg,
    scale: &Linear,
    (y, top): (f64, f64),
    label: &str,
    (ticks, step): (Vec<f64>, f64),
) {
    for tick in ticks {
        let x = scale.at(tick);
        svg.line((x, top), (x, y), "grid");
        svg.text(
            (x, y + 14.0),
            Anchor::Middle,
            "tick",
            &tick_text(tick, step),
        );
    }
    svg.line((scale.range.0, y), (scale.range.1, y), "axis");
    let middle = (scale.range.0 + scale.range.1) / 2.0;
    svg.text((middle, y + 32.0), Anchor::Middle, "axis-label", label);
}

/// A vertical value axis at `x`, gridlines across to `right`, and its label turned upright.
pub(crate) fn y_axis(svg: &mut Svg, scale: &Linear, x: f64, right: f64, label: &str) {
    let (ticks, step) = scale.ticks(5);
    for tick in ticks {
        let y = scale.at(tick);
        svg.line((x, y), (right, y), "grid");
        svg.text(
            (x - 6.0, y + 4.0),
            Anchor::End,
            "tick",
            &tick_text(tick, step),
        );
    }
    svg.line((x, scale.range.0), (x, scale.range.1), "axis");
    let middle = (scale.range.0 + scale.range.1) / 2.0;
    svg.text_rotated((14.0, middle), Anchor::Middle, "axis-label", label, -90.0);
}

/// A row of swatches naming each series, starting at (`x`, `y`).
pub(crate) fn legend(svg: &mut Svg, x: f64, y: f64, series: &[String]) {
    let mut at = x;
    for (i, name) in series.iter().enumerate() {
        svg.rect(at, y - 9.0, 10.0, 10.0, &series_class(i), "");
        let shown = super::html::truncate(name, 40);
        svg.text((at + 14.0, y), Anchor::Start, "", &shown);
        at += 24.0 + 7.0 * shown.chars().count() as f64;
    }
}

/// The CSS class of series `i` (colours repeat after [`SERIES_COLOURS`]).
pub(crate) fn series_class(i: usize) -> String {
    format!("s{}", i % SERIES_COLOURS)
}

/// The width labels of `labels` need, at about 7 units a character, between 40 and 240.
pub(crate) fn label_width(labels: impl IntoIterator<Item = usize>) -> f64 {
    let longest = labels.into_iter().max().unwrap_or(0).min(34);
    (longest as f64 * 7.0 + 12.0).clamp(40.0, 240.0)
}

/// Viridis, sampled: dark blue (low) to yellow (high); readable in both themes and in print,
/// and by readers who do not tell red from green.
const HEAT_STOPS: [(f64, f64, f64); 5] = [
    (68.0, 1.0, 84.0),
    (59.0, 82.0, 139.0),
    (33.0, 145.0, 140.0),
    (94.0, 201.0, 98.0),
    (253.0, 231.0, 37.0),
];

/// The fill of a heatmap cell at `t` in 0..=1, and the text colour readable on it.
pub(crate) fn heat_colour(t: f64) -> (String, &'static str) {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let scaled = t * (HEAT_STOPS.len() - 1) as f64;
    let i = (scaled.floor() as usize).min(HEAT_STOPS.len() - 2);
    let f = scaled - i as f64;
    let (a, b) = (HEAT_STOPS[i], HEAT_STOPS[i + 1]);
    let mix = |x: f64, y: f64| (x + (y - x) * f).round() as u8;
    let (r, g, bl) = (mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2));
    let luminance = 0.2126 * f64::from(r) + 0.7152 * f64::from(g) + 0.0722 * f64::from(bl);
    let text = if luminance > 140.0 { "#000" } else { "#fff" };
    (format!("#{r:02x}{g:02x}{bl:02x}"), text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writer_makes_well_formed_svg_with_accessible_names() {
        let mut svg = Svg::new("a", 100.0, 50.0, "Success <per> model", "desc & more");
        svg.rect(1.0, 2.0, 3.0, 4.0, "s0", "tip </title><script>");
        svg.circle((5.0, 5.0), 2.0, "s1", "");
        svg.text((1.0, 1.0), Anchor::End, "tick", "<b>");
        svg.label((1.0, 1.0), Anchor::Start, "a very long label indeed", 6);
        svg.polyline(&[(0.0, 0.0), (1.5, 2.26)], "line s0");
        let text = svg.finish();
        let doc = roxmltree::Document::parse(&text).unwrap();
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        assert_eq!(root.attribute("role"), Some("img"));
        let title = root.first_element_child().unwrap();
        assert_eq!(title.text(), Some("Success <per> model"));
        assert!(
            doc.descendants()
                .all(|n| n.tag_name().name() != "script" && n.tag_name().name() != "b")
        );
        assert!(text.contains("points=\"0,0 1.5,2.3\""), "{text}");
        assert!(text.contains("<title>a very long label indeed</title>"));
    }

    #[test]
    fn scales_map_and_tick_roundly() {
        let s = Linear::new((0.0, 100.0), (10.0, 210.0));
        assert_eq!(s.at(50.0), 110.0);
        assert_eq!(s.at(150.0), 210.0, "clamped");
        let (ticks, step) = s.ticks(5);
        assert_eq!(step, 20.0);
        assert_eq!(ticks, [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        let (ticks, step) = Linear::new((0.0, 0.0031), (0.0, 1.0)).ticks(6);
        assert_eq!(tick_text(ticks[1], step), "0.001");
        let flat = Linear::new((3.0, 3.0), (0.0, 10.0));
        assert_eq!(flat.at(3.0), 5.0, "an empty domain is widened");
        assert_eq!(tick_text(-0.0, 0.5), "0.0");
        assert_eq!(tick_text(-1.0, 0.5), "-1.0");
    }

    #[test]
    fn heat_colours_run_dark_to_light_with_readable_text() {
        assert_eq!(heat_colour(0.0), ("#440154".to_owned(), "#fff"));
        assert_eq!(heat_colour(1.0), ("#fde725".to_owned(), "#000"));
        assert_eq!(heat_colour(f64::NAN).0, "#440154");
    }
}
