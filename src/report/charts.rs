//! The report's charts, as SVG text: dots with intervals, a heatmap, a scatter with its
//! cost/quality frontier, box plots, stacked bars and lines over categories. Each chart takes
//! its data ready-made (labels, numbers, tooltips) and knows nothing of runs or frames.

use std::fmt::Write as _;

use super::html::{escape, number};
use super::svg::{
    Anchor, Linear, Svg, WIDTH, count_axis, headroom, heat_colour, label_width, legend,
    series_class, x_axis, y_axis,
};

/// A value with an optional interval, and its numbers as text for a tooltip.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub value: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub tip: String,
}

/// One row of a dot chart: a label and a mark per series (`None`: nothing to show).
#[derive(Debug, Clone, PartialEq)]
pub struct DotRow {
    pub label: String,
    pub marks: Vec<Option<Mark>>,
}

/// What every chart is called and what its axes measure.
#[derive(Debug, Clone, Copy)]
pub struct Titles<'a> {
    /// Unique in the page.
    pub id: &'a str,
    pub title: &'a str,
    pub x: &'a str,
    pub y: &'a str,
}

/// Dots (with intervals as whiskers), one row per label and one dot per series.
#[derive(Debug, Clone)]
pub struct DotChart<'a> {
    pub titles: Titles<'a>,
    /// Series names; a legend is drawn when there are several.
    pub series: Vec<String>,
    pub rows: Vec<DotRow>,
    pub domain: (f64, f64),
    /// A vertical line at this value (0 for differences).
    pub reference: Option<f64>,
}

/// Space above the plot for a legend, when there is one.
fn legend_space(series: &[String]) -> f64 {
    if series.len() > 1 { 30.0 } else { 10.0 }
}

/// The dot chart as SVG.
pub(crate) fn dot_chart(chart: &DotChart<'_>) -> String {
    let t = chart.titles;
    let per_row = chart.series.len().max(1);
    let row_height = (per_row as f64 * 11.0 + 10.0).max(24.0);
    let left = label_width(chart.rows.iter().map(|r| r.label.chars().count())) + 24.0;
    let top = legend_space(&chart.series);
    let bottom = top + row_height * chart.rows.len() as f64;
    let height = bottom + 44.0;
    let description = format!(
        "{} rows; the table below gives every number.",
        chart.rows.len()
    );
    let mut svg = Svg::new(t.id, WIDTH, height, t.title, &description);
    if chart.series.len() > 1 {
        legend(&mut svg, left, 18.0, &chart.series);
    }
    let scale = Linear::new(chart.domain, (left, WIDTH - 20.0));
    x_axis(&mut svg, &scale, bottom, top, t.x);
    svg.text_rotated(
        (14.0, (top + bottom) / 2.0),
        Anchor::Middle,
        "axis-label",
        t.y,
        -90.0,
    );
    if let Some(at) = chart.reference {
        svg.line((scale.at(at), top), (scale.at(at), bottom), "ref");
    }
    for (r, row) in chart.rows.iter().enumerate() {
        let row_top = top + r as f64 * row_height;
        svg.label(
            (left - 8.0, row_top + row_height / 2.0 + 4.0),
            Anchor::End,
            &row.label,
            34,
        );
        for (i, mark) in row.marks.iter().enumerate() {
            let Some(mark) = mark else { continue };
            let y = row_top + (i as f64 + 0.5) * row_height / per_row as f64;
            let class = series_class(i);
            if let (Some(low), Some(high)) = (mark.low, mark.high) {
                svg.line(
                    (scale.at(low), y),
                    (scale.at(high), y),
                    &format!("whisker {class}"),
                );
            }
            svg.circle(
                (scale.at(mark.value), y),
                4.5,
                &format!("dot {class}"),
                &mark.tip,
            );
        }
    }
    svg.finish()
}

/// A grid of values: rows × columns, each cell coloured by its value and labelled with it.
#[derive(Debug, Clone)]
pub struct Heatmap<'a> {
    pub titles: Titles<'a>,
    pub columns: Vec<String>,
    pub rows: Vec<String>,
    /// `cells[row][column]`; `None` for a cell with no value.
    pub cells: Vec<Vec<Option<f64>>>,
    pub domain: (f64, f64),
    /// The summary column whose format the values take (`success_pct`).
    pub value_column: &'a str,
}

/// The heatmap as SVG.
pub(crate) fn heatmap(map: &Heatmap<'_>) -> String {
    let t = map.titles;
    let left = label_width(map.rows.iter().map(|r| r.chars().count())) + 24.0;
    let longest_column = map.columns.iter().map(|c| c.chars().count().min(28)).max();
    let top = (longest_column.unwrap_or(4) as f64 * 5.0 + 24.0).min(170.0);
    let columns = map.columns.len().max(1) as f64;
    let cell_width = ((WIDTH - left - 20.0) / columns).clamp(12.0, 72.0);
    let cell_height = 20.0;
    let bottom = top + cell_height * map.rows.len() as f64;
    // Room on the right for the last column's slanted label, and for the colour legend.
    let slant = longest_column.unwrap_or(0) as f64 * 5.5;
    let width = (left + cell_width * columns + slant).max(left + 310.0);
    let description = format!(
        "{} rows by {} columns; each cell's value is written in it or in its tooltip.",
        map.rows.len(),
        map.columns.len()
    );
    let mut svg = Svg::new(t.id, width, bottom + 64.0, t.title, &description);
    for (j, column) in map.columns.iter().enumerate() {
        let x = left + (j as f64 + 0.5) * cell_width;
        svg.text_rotated(
            (x, top - 6.0),
            Anchor::Start,
            "",
            &super::html::truncate(column, 28),
            -40.0,
        );
    }
    let span = map.domain.1 - map.domain.0;
    let writes_values = cell_width >= 34.0;
    for (i, row) in map.rows.iter().enumerate() {
        let y = top + i as f64 * cell_height;
        svg.label((left - 8.0, y + 14.0), Anchor::End, row, 34);
        for (j, column) in map.columns.iter().enumerate() {
            let x = left + j as f64 * cell_width;
            let value = map.cells.get(i).and_then(|r| r.get(j)).copied().flatten();
            let text = value.map_or_else(|| "–".to_owned(), |v| number(map.value_column, v));
            let tip = format!("{row} · {column}: {text}");
            match value {
                Some(v) => {
                    let (fill, ink) = heat_colour((v - map.domain.0) / span);
                    svg.filled_rect(x, y, (cell_width - 1.0, cell_height - 1.0), &fill, &tip);
                    if writes_values {
                        let at = (x + cell_width / 2.0, y + 14.0);
                        write_cell_text(&mut svg, at, ink, &text);
                    }
                }
                None => svg.rect(x, y, cell_width - 1.0, cell_height - 1.0, "empty", &tip),
            }
        }
    }
    svg.text(
        ((left + width - 20.0) / 2.0, bottom + 22.0),
        Anchor::Middle,
        "axis-label",
        t.x,
    );
    svg.text_rotated(
        (14.0, (top + bottom) / 2.0),
        Anchor::Middle,
        "axis-label",
        t.y,
        -90.0,
    );
    heat_legend(&mut svg, left, bottom + 38.0, map);
    svg.finish()
}

/// A cell's value in the ink that reads on its fill.
fn write_cell_text(svg: &mut Svg, at: (f64, f64), ink: &str, text: &str) {
    let class = if ink == "#000" {
        "ink-dark"
    } else {
        "ink-light"
    };
    svg.text(at, Anchor::Middle, class, text);
}

/// Five swatches from the low to the high end of the heatmap's scale.
fn heat_legend(svg: &mut Svg, x: f64, y: f64, map: &Heatmap<'_>) {
    svg.text((x, y + 11.0), Anchor::End, "tick", "scale: ");
    for k in 0..5 {
        let t = k as f64 / 4.0;
        let value = map.domain.0 + t * (map.domain.1 - map.domain.0);
        let (fill, _) = heat_colour(t);
        let at = x + 4.0 + k as f64 * 56.0;
        svg.filled_rect(at, y, (16.0, 14.0), &fill, "");
        svg.text(
            (at + 20.0, y + 11.0),
            Anchor::Start,
            "tick",
            &number(map.value_column, value),
        );
    }
}

/// A point of a scatter: its label, position and an optional vertical interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub label: String,
    pub x: f64,
    pub y: f64,
    pub y_low: Option<f64>,
    pub y_high: Option<f64>,
    pub tip: String,
}

/// Points on two value axes; with `frontier`, the points no other point beats on both (lower
/// x and higher y) are joined: the cheapest choice at each level of quality.
#[derive(Debug, Clone)]
pub struct Scatter<'a> {
    pub titles: Titles<'a>,
    pub points: Vec<Point>,
    pub y_domain: (f64, f64),
    pub frontier: bool,
}

/// The indices of the points on the frontier (lowest x for its y, best y for its x), by x.
pub(crate) fn frontier(points: &[Point]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|&a, &b| {
        points[a]
            .x
            .total_cmp(&points[b].x)
            .then(points[b].y.total_cmp(&points[a].y))
    });
    let mut best = f64::NEG_INFINITY;
    order
        .into_iter()
        .filter(|&i| {
            let better = points[i].y > best;
            best = best.max(points[i].y);
            better
        })
        .collect()
}

/// The scatter as SVG.
pub(crate) fn scatter(chart: &Scatter<'_>) -> String {
    let t = chart.titles;
    let (left, top, bottom) = (70.0, 14.0, 320.0);
    let max_x = chart.points.iter().map(|p| p.x).fold(0.0, f64::max);
    let x_scale = Linear::new((0.0, headroom(max_x)), (left, WIDTH - 150.0));
    let y_scale = Linear::new(chart.y_domain, (bottom, top));
    let description = format!(
        "{} points; the table below gives every number.",
        chart.points.len()
    );
    let mut svg = Svg::new(t.id, WIDTH, bottom + 48.0, t.title, &description);
    x_axis(&mut svg, &x_scale, bottom, top, t.x);
    y_axis(&mut svg, &y_scale, left, WIDTH - 150.0, t.y);
    let front = if chart.frontier {
        frontier(&chart.points)
    } else {
        Vec::new()
    };
    if front.len() > 1 {
        let line: Vec<(f64, f64)> = front
            .iter()
            .map(|&i| (x_scale.at(chart.points[i].x), y_scale.at(chart.points[i].y)))
            .collect();
        svg.polyline(&line, "frontier");
    }
    let mut labelled: Vec<(f64, f64)> = Vec::new();
    for (i, p) in chart.points.iter().enumerate() {
        let (x, y) = (x_scale.at(p.x), y_scale.at(p.y));
        if let (Some(low), Some(high)) = (p.y_low, p.y_high) {
            svg.line(
                (x, y_scale.at(low)),
                (x, y_scale.at(high)),
                &format!("whisker {}", series_class(i)),
            );
        }
        let class = if front.contains(&i) {
            "dot front"
        } else {
            "dot"
        };
        svg.circle((x, y), 5.0, &format!("{class} {}", series_class(i)), &p.tip);
        // A label that would overprint an earlier one is left out (its point keeps its
        // tooltip, and the table has every number).
        let clear = |&(lx, ly): &(f64, f64)| (lx - x).abs() > 150.0 || (ly - y).abs() > 13.0;
        if labelled.iter().all(clear) {
            svg.label((x + 8.0, y - 6.0), Anchor::Start, &p.label, 22);
            labelled.push((x, y));
        }
    }
    svg.finish()
}

/// One row of a box plot: the five numbers of a distribution.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxRow {
    pub label: String,
    pub min: f64,
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub max: f64,
    pub tip: String,
}

/// Box plots, one per row: the box spans the quartiles, a bar marks the median and the
/// whiskers reach the minimum and maximum.
pub(crate) fn box_plot(titles: Titles<'_>, rows: &[BoxRow]) -> String {
    let row_height = 26.0;
    let left = label_width(rows.iter().map(|r| r.label.chars().count())) + 24.0;
    let (top, bottom) = (10.0, 10.0 + row_height * rows.len() as f64);
    let max = rows.iter().map(|r| r.max).fold(0.0, f64::max);
    let scale = Linear::new((0.0, headroom(max)), (left, WIDTH - 20.0));
    let description = format!(
        "{} distributions; the table below gives their quartiles.",
        rows.len()
    );
    let mut svg = Svg::new(titles.id, WIDTH, bottom + 44.0, titles.title, &description);
    x_axis(&mut svg, &scale, bottom, top, titles.x);
    svg.text_rotated(
        (14.0, (top + bottom) / 2.0),
        Anchor::Middle,
        "axis-label",
        titles.y,
        -90.0,
    );
    for (i, row) in rows.iter().enumerate() {
        let y = top + i as f64 * row_height + row_height / 2.0;
        let class = series_class(i);
        svg.label((left - 8.0, y + 4.0), Anchor::End, &row.label, 34);
        svg.line(
            (scale.at(row.min), y),
            (scale.at(row.max), y),
            &format!("whisker {class}"),
        );
        let (x1, x3) = (scale.at(row.q1), scale.at(row.q3));
        svg.rect(
            x1,
            y - 7.0,
            (x3 - x1).max(1.0),
            14.0,
            &format!("box {class}"),
            &row.tip,
        );
        let m = scale.at(row.median);
        svg.line((m, y - 8.0), (m, y + 8.0), "median");
    }
    svg.finish()
}

/// One bar: its label and its stacked parts, each a value and its tooltip.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub label: String,
    pub parts: Vec<(f64, String)>,
}

/// Horizontal bars of counts, one per row, stacked by series, each with its total.
#[derive(Debug, Clone)]
pub struct BarChart<'a> {
    pub titles: Titles<'a>,
    pub series: Vec<String>,
    pub bars: Vec<Bar>,
}

/// The stacked bars as SVG.
pub(crate) fn bar_chart(chart: &BarChart<'_>) -> String {
    let t = chart.titles;
    let row_height = 24.0;
    let left = label_width(chart.bars.iter().map(|b| b.label.chars().count())) + 24.0;
    let top = legend_space(&chart.series);
    let bottom = top + row_height * chart.bars.len() as f64;
    let total = |b: &Bar| b.parts.iter().map(|p| p.0).sum::<f64>();
    let max = chart.bars.iter().map(total).fold(0.0, f64::max);
    // Room after the longest bar for its total.
    let scale = Linear::new((0.0, headroom(max) * 1.08), (left, WIDTH - 20.0));
    let description = format!(
        "{} bars; the table below gives every number.",
        chart.bars.len()
    );
    let mut svg = Svg::new(t.id, WIDTH, bottom + 44.0, t.title, &description);
    if chart.series.len() > 1 {
        legend(&mut svg, left, 18.0, &chart.series);
    }
    count_axis(&mut svg, &scale, bottom, top, t.x);
    svg.text_rotated(
        (14.0, (top + bottom) / 2.0),
        Anchor::Middle,
        "axis-label",
        t.y,
        -90.0,
    );
    for (i, bar) in chart.bars.iter().enumerate() {
        let y = top + i as f64 * row_height;
        svg.label(
            (left - 8.0, y + row_height / 2.0 + 4.0),
            Anchor::End,
            &bar.label,
            34,
        );
        let mut start = 0.0;
        for (k, (value, tip)) in bar.parts.iter().enumerate() {
            let (x0, x1) = (scale.at(start), scale.at(start + value));
            let class = format!("bar {}", series_class(k));
            svg.rect(x0, y + 4.0, x1 - x0, row_height - 8.0, &class, tip);
            start += value;
        }
        let total = crate::output::thousands(start.round().max(0.0) as u64);
        let at = (scale.at(start) + 4.0, y + row_height / 2.0 + 4.0);
        svg.text(at, Anchor::Start, "tick", &total);
    }
    svg.finish()
}

/// Lines over categories (x), one per series, with intervals at their points.
#[derive(Debug, Clone)]
pub struct LineChart<'a> {
    pub titles: Titles<'a>,
    pub categories: Vec<String>,
    pub series: Vec<(String, Vec<Option<Mark>>)>,
    pub domain: (f64, f64),
}

/// The lines as SVG.
pub(crate) fn line_chart(chart: &LineChart<'_>) -> String {
    let t = chart.titles;
    let names: Vec<String> = chart.series.iter().map(|s| s.0.clone()).collect();
    let (left, top, bottom) = (70.0, legend_space(&names) + 6.0, 300.0);
    let y_scale = Linear::new(chart.domain, (bottom, top));
    let band = (WIDTH - left - 20.0) / chart.categories.len().max(1) as f64;
    let description = format!(
        "{} lines over {} categories; the table below gives every number.",
        chart.series.len(),
        chart.categories.len()
    );
    let mut svg = Svg::new(t.id, WIDTH, bottom + 48.0, t.title, &description);
    if names.len() > 1 {
        legend(&mut svg, left, 18.0, &names);
    }
    y_axis(&mut svg, &y_scale, left, WIDTH - 20.0, t.y);
    svg.line((left, bottom), (WIDTH - 20.0, bottom), "axis");
    for (k, category) in chart.categories.iter().enumerate() {
        let x = left + (k as f64 + 0.5) * band;
        svg.text((x, bottom + 16.0), Anchor::Middle, "tick", category);
    }
    svg.text(
        ((left + WIDTH - 20.0) / 2.0, bottom + 36.0),
        Anchor::Middle,
        "axis-label",
        t.x,
    );
    let spread = chart.series.len().saturating_sub(1) as f64 / 2.0;
    for (i, (_, marks)) in chart.series.iter().enumerate() {
        let class = series_class(i);
        let x_of = |k: usize| left + (k as f64 + 0.5) * band + (i as f64 - spread) * 7.0;
        let points: Vec<(f64, f64)> = marks
            .iter()
            .enumerate()
            .filter_map(|(k, m)| m.as_ref().map(|m| (x_of(k), y_scale.at(m.value))))
            .collect();
        svg.polyline(&points, &format!("line {class}"));
        for (k, mark) in marks.iter().enumerate() {
            let Some(mark) = mark else { continue };
            if let (Some(low), Some(high)) = (mark.low, mark.high) {
                svg.line(
                    (x_of(k), y_scale.at(low)),
                    (x_of(k), y_scale.at(high)),
                    &format!("whisker {class}"),
                );
            }
            svg.circle(
                (x_of(k), y_scale.at(mark.value)),
                4.5,
                &format!("dot {class}"),
                &mark.tip,
            );
        }
    }
    svg.finish()
}

/// A chart in a `<figure>`: its caption, the chart, a note under it and its numbers as a
/// table (each may be empty).
pub(crate) fn figure(id: &str, caption: &str, chart: &str, note: &str, numbers: &str) -> String {
    let mut out = String::with_capacity(chart.len() + numbers.len() + 256);
    let _ = write!(
        out,
        "<figure id=\"{}\"><figcaption>{}</figcaption>{chart}",
        escape(id),
        escape(caption)
    );
    if !note.is_empty() {
        let _ = write!(out, "<p class=\"note\">{}</p>", escape(note));
    }
    out.push_str(numbers);
    out.push_str("</figure>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "</script><img src=x onerror=alert(1)>";

    fn titles(id: &str) -> Titles<'_> {
        Titles {
            id,
            title: "A chart",
            x: "x axis",
            y: "y axis",
        }
    }

    fn mark(value: f64) -> Mark {
        Mark {
            value,
            low: Some(value - 1.0),
            high: Some(value + 1.0),
            tip: format!("{HOSTILE} {value}"),
        }
    }

    /// Parses `svg` strictly and checks it holds no element a hostile label could inject.
    fn well_formed(svg: &str) -> roxmltree::Document<'_> {
        let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        for node in doc.descendants() {
            assert!(!matches!(node.tag_name().name(), "script" | "img"), "{svg}");
        }
        assert!(svg.contains("<title id=") && svg.contains("<desc id="));
        doc
    }

    #[test]
    fn every_chart_is_well_formed_with_hostile_labels() {
        let dots = dot_chart(&DotChart {
            titles: titles("d"),
            series: vec![HOSTILE.into(), "b".into()],
            rows: vec![DotRow {
                label: HOSTILE.into(),
                marks: vec![Some(mark(3.0)), None],
            }],
            domain: (0.0, 5.0),
            reference: Some(0.0),
        });
        well_formed(&dots);
        let heat = heatmap(&Heatmap {
            titles: titles("h"),
            columns: vec![HOSTILE.into()],
            rows: vec![HOSTILE.into(), "p2".into()],
            cells: vec![vec![Some(50.0)], vec![None]],
            domain: (0.0, 100.0),
            value_column: "success_pct",
        });
        let doc = well_formed(&heat);
        assert!(doc.descendants().any(|n| n.text() == Some("50.0")));
        let point = Point {
            label: HOSTILE.into(),
            x: 1.0,
            y: 50.0,
            y_low: Some(40.0),
            y_high: Some(60.0),
            tip: HOSTILE.into(),
        };
        well_formed(&scatter(&Scatter {
            titles: titles("s"),
            points: vec![
                point.clone(),
                Point {
                    x: 2.0,
                    y: 80.0,
                    ..point
                },
            ],
            y_domain: (0.0, 100.0),
            frontier: true,
        }));
        let row = BoxRow {
            label: HOSTILE.into(),
            min: 1.0,
            q1: 2.0,
            median: 3.0,
            q3: 4.0,
            max: 9.0,
            tip: HOSTILE.into(),
        };
        well_formed(&box_plot(titles("b"), &[row]));
        well_formed(&bar_chart(&BarChart {
            titles: titles("bar"),
            series: vec!["in".into(), HOSTILE.into()],
            bars: vec![Bar {
                label: HOSTILE.into(),
                parts: vec![(1.0, HOSTILE.into()), (2.0, String::new())],
            }],
        }));
        well_formed(&line_chart(&LineChart {
            titles: titles("l"),
            categories: vec!["0".into(), "1".into(), HOSTILE.into()],
            series: vec![(HOSTILE.into(), vec![Some(mark(0.2)), None, Some(mark(0.9))])],
            domain: (0.0, 1.0),
        }));
    }

    #[test]
    fn empty_charts_still_draw() {
        well_formed(&dot_chart(&DotChart {
            titles: titles("e"),
            series: vec![],
            rows: vec![],
            domain: (0.0, 0.0),
            reference: None,
        }));
        well_formed(&box_plot(titles("b"), &[]));
        well_formed(&line_chart(&LineChart {
            titles: titles("l"),
            categories: vec![],
            series: vec![],
            domain: (0.0, 1.0),
        }));
    }

    #[test]
    fn the_frontier_keeps_the_cheapest_at_each_level_of_quality() {
        let p = |x: f64, y: f64| Point {
            label: String::new(),
            x,
            y,
            y_low: None,
            y_high: None,
            tip: String::new(),
        };
        // b is dearer and worse than a; d is dearer than c for the same quality.
        let points = [
            p(1.0, 50.0),
            p(2.0, 40.0),
            p(3.0, 90.0),
            p(4.0, 90.0),
            p(0.5, 10.0),
        ];
        assert_eq!(frontier(&points), [4, 0, 2]);
    }

    #[test]
    fn a_figure_holds_its_caption_chart_note_and_numbers() {
        let html = figure("f", "Cap <1>", "<svg></svg>", "a & b", "<table></table>");
        let doc = roxmltree::Document::parse(&html).unwrap();
        assert_eq!(doc.root_element().attribute("id"), Some("f"));
        assert!(html.contains("Cap &lt;1&gt;") && html.contains("a &amp; b"));
    }
}
