//! The section of a report on two runs of one kind (`track report --run BASE,NEW`): the same
//! comparison as `track diff BASE NEW`, from the [`RunDiff`] the kind's diff made (handed in),
//! with its headline, the significant regressions, the summary and the changed items.

use std::fmt::Write as _;

use super::html::{TableOptions, escape, frame_table};
use super::{ReportError, Section};
use crate::analysis::diff::RunDiff;

/// Changed items and items of one run listed in the report (all of them: `track diff --items`).
const LISTED_ITEMS: usize = 200;

/// The comparison of two runs.
pub struct ComparisonSection {
    diff: RunDiff,
    body: String,
}

impl ComparisonSection {
    /// The section of `diff`, the comparison of its new run with its base run.
    pub(crate) fn new(diff: RunDiff) -> Result<Self, ReportError> {
        let body = body(&diff)?;
        Ok(Self { diff, body })
    }
}

impl Section for ComparisonSection {
    fn anchor(&self) -> &'static str {
        "comparison"
    }

    fn heading(&self) -> String {
        format!(
            "Run {} against run {}",
            self.diff.new_run, self.diff.base_run
        )
    }

    fn body(&self) -> Result<String, ReportError> {
        Ok(self.body.clone())
    }
}

fn body(diff: &RunDiff) -> Result<String, ReportError> {
    let mut out = String::new();
    let _ = write!(
        out,
        "<p>{}. The same numbers as <code>track diff {} {}</code>.</p>",
        escape(&diff.headline()),
        diff.base_run,
        diff.new_run
    );
    if diff.significant.is_empty() {
        out.push_str("<p>No regression is significant at 0.05.</p>");
    } else {
        out.push_str("<div class=\"banner\" role=\"alert\"><p><strong>Significant regressions</strong> (what <code>--fail-on-regression</code> fails on):</p><ul>");
        for regression in &diff.significant {
            let _ = write!(out, "<li>{}</li>", escape(regression));
        }
        out.push_str("</ul></div>");
    }
    if !diff.improvements.is_empty() {
        out.push_str(
            "<p><strong>Significant improvements</strong> (a candidate that changed and gained \
             ground: not regressions):</p><ul>",
        );
        for improvement in &diff.improvements {
            let _ = write!(out, "<li>{}</li>", escape(improvement));
        }
        out.push_str("</ul>");
    }
    out.push_str(&frame_table(
        &diff.summary,
        TableOptions {
            id: "comparison-summary",
            caption: "Summary (as track diff --format csv)",
            max_rows: usize::MAX,
        },
    ));
    let all = format!(
        "all of them: <code>track diff {} {} --items --format csv</code>",
        diff.base_run, diff.new_run
    );
    for (id, caption, frame) in [
        ("comparison-changes", "Changed items", diff.changes()?),
        (
            "comparison-unpaired",
            "Items in one run only",
            diff.unpaired()?,
        ),
    ] {
        if frame.height() == 0 {
            continue;
        }
        out.push_str(&frame_table(
            &frame,
            TableOptions {
                id,
                caption,
                max_rows: LISTED_ITEMS,
            },
        ));
        if frame.height() > LISTED_ITEMS {
            let _ = write!(out, "<p class=\"note\">{all}</p>");
        }
    }
    Ok(out)
}
