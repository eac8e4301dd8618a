//! The tool calls of benchmarks' tool loops (`tool_calls`): written with their results' rows,
//! read for the exports (one row per call: the result's key and model, the step, the tool, its
//! arguments and its result).

use rusqlite::params;

use super::{Result, Store};

/// One call of a tool the model asked for, in a tool loop of one evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallRow {
    pub run_id: i64,
    pub model_index: u32,
    pub template_index: u32,
    pub prompt_index: u32,
    pub repeat_index: u32,
    /// The call of the model that asked for it, from 1.
    pub step: u32,
    /// Its place among that answer's calls, from 0.
    pub call_index: u32,
    /// The provider's id of the call.
    pub call_id: String,
    pub name: String,
    /// The arguments, a JSON object as text.
    pub arguments: String,
    /// The result sent back; `None` when the loop stopped before answering it (max_steps).
    pub result: Option<String>,
}

/// A stored tool call with what names its evaluation, as exported.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportedToolCall {
    pub run_id: i64,
    pub model_ref: String,
    pub prompt_name: String,
    pub template_name: Option<String>,
    pub repeat_index: u32,
    pub step: u32,
    pub call_index: u32,
    pub call_id: String,
    pub name: String,
    pub arguments: String,
    pub result: Option<String>,
}

/// The columns of the tool-calls export, in order.
pub const TOOL_CALL_COLUMNS: [&str; 11] = [
    "run_id",
    "model",
    "prompt",
    "template",
    "repeat_index",
    "step",
    "call_index",
    "call_id",
    "tool",
    "arguments",
    "result",
];

impl Store {
    /// Stores `rows` (a result's calls are written again when it is graded again: the last
    /// grading's are kept).
    pub fn insert_tool_calls(&mut self, rows: &[ToolCallRow]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let tx = self.conn.transaction()?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT OR REPLACE INTO tool_calls (run_id, model_index, template_index,
                     prompt_index, repeat_index, step, call_index, call_id, name, arguments,
                     result)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )?;
            for row in rows {
                insert.execute(params![
                    row.run_id,
                    row.model_index,
                    row.template_index,
                    row.prompt_index,
                    row.repeat_index,
                    row.step,
                    row.call_index,
                    row.call_id,
                    row.name,
                    row.arguments,
                    row.result,
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The tool calls of the result `key`, in step and call order (the viewer's transcript).
    pub(crate) fn tool_calls_of(&self, key: &super::ResultKey) -> Result<Vec<ToolCallRow>> {
        let mut statement = self.conn.prepare_cached(
            "SELECT step, call_index, call_id, name, arguments, result FROM tool_calls
             WHERE run_id = ?1 AND model_index = ?2 AND template_index = ?3
                 AND prompt_index = ?4 AND repeat_index = ?5
             ORDER BY step, call_index",
        )?;
        let rows = statement
            .query_map(
                rusqlite::params![
                    key.run_id,
                    key.model_index,
                    key.template_index,
                    key.prompt_index,
                    key.repeat_index
                ],
                |r| {
                    Ok(ToolCallRow {
                        run_id: key.run_id,
                        model_index: key.model_index,
                        template_index: key.template_index,
                        prompt_index: key.prompt_index,
                        repeat_index: key.repeat_index,
                        step: r.get(0)?,
                        call_index: r.get(1)?,
                        call_id: r.get(2)?,
                        name: r.get(3)?,
                        arguments: r.get(4)?,
                        result: r.get(5)?,
                    })
                },
            )?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// The tool calls of runs `run_ids` (all runs when empty), in key order, with the model
    /// and the case of the result they belong to.
    pub fn tool_calls(&self, run_ids: &[i64]) -> Result<Vec<ExportedToolCall>> {
        let mut statement = self.conn.prepare_cached(
            "SELECT t.run_id, coalesce(b.model_ref, ''), coalesce(b.prompt_name, ''),
                 b.template_name, t.repeat_index, t.step, t.call_index, t.call_id, t.name,
                 t.arguments, t.result
             FROM tool_calls t
             LEFT JOIN bench_results b ON b.run_id = t.run_id AND b.model_index = t.model_index
                 AND b.template_index = t.template_index AND b.prompt_index = t.prompt_index
                 AND b.repeat_index = t.repeat_index
             WHERE ?1 = '[]' OR t.run_id IN (SELECT value FROM json_each(?1))
             ORDER BY t.run_id, t.model_index, t.template_index, t.prompt_index,
                 t.repeat_index, t.step, t.call_index",
        )?;
        let ids = serde_json::to_string(run_ids).unwrap_or_else(|_| "[]".to_owned());
        let rows = statement
            .query_map([ids], |r| {
                Ok(ExportedToolCall {
                    run_id: r.get(0)?,
                    model_ref: r.get(1)?,
                    prompt_name: r.get(2)?,
                    template_name: r.get(3)?,
                    repeat_index: r.get(4)?,
                    step: r.get(5)?,
                    call_index: r.get(6)?,
                    call_id: r.get(7)?,
                    name: r.get(8)?,
                    arguments: r.get(9)?,
                    result: r.get(10)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(run_id: i64, step: u32, name: &str, result: Option<&str>) -> ToolCallRow {
        ToolCallRow {
            run_id,
            model_index: 0,
            template_index: 0,
            prompt_index: 0,
            repeat_index: 0,
            step,
            call_index: 0,
            call_id: format!("c{step}"),
            name: name.into(),
            arguments: r#"{"city":"Paris"}"#.into(),
            result: result.map(str::to_owned),
        }
    }

    #[test]
    fn tool_calls_are_stored_and_read_back_by_run_in_step_order() {
        let mut store = Store::open_in_memory().unwrap();
        let kind = crate::kind::ExperimentKind::Bench;
        let a = store.create_run(kind, None, None, "{}").unwrap();
        let b = store.create_run(kind, None, None, "{}").unwrap();
        store
            .insert_tool_calls(&[
                row(a, 2, "clock", None),
                row(a, 1, "weather", Some("sunny")),
                row(b, 1, "weather", Some("rain")),
            ])
            .unwrap();
        let of_a = store.tool_calls(&[a]).unwrap();
        let names: Vec<(&str, Option<&str>)> = of_a
            .iter()
            .map(|c| (c.name.as_str(), c.result.as_deref()))
            .collect();
        assert_eq!(names, [("weather", Some("sunny")), ("clock", None)]);
        assert_eq!(store.tool_calls(&[]).unwrap().len(), 3);
        // Graded again: the last grading's row, not two.
        store
            .insert_tool_calls(&[row(b, 1, "weather", Some("hail"))])
            .unwrap();
        let of_b = store.tool_calls(&[b]).unwrap();
        assert_eq!(of_b.len(), 1);
        assert_eq!(of_b[0].result.as_deref(), Some("hail"));
    }
}
