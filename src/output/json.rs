//! Frames as JSON: an array of objects, one per row, keys in column order, stable schema.

use polars::prelude::{AnyValue, DataFrame};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use super::tidy_float;

/// A frame as a JSON array of objects, one per row, keys in column order.
#[cfg(test)]
pub(crate) fn to_json(df: &DataFrame) -> Value {
    let columns = df.columns();
    let rows = (0..df.height())
        .map(|row| {
            let mut object = serde_json::Map::new();
            for c in columns {
                let value = c.get(row).unwrap_or(AnyValue::Null);
                object.insert(c.name().to_string(), json_value(&value));
            }
            Value::Object(object)
        })
        .collect();
    Value::Array(rows)
}

/// Writes `df` as [`to_json`]'s array, pretty-printed, one row at a time: the text is the same
/// as `serde_json::to_writer_pretty` of [`to_json`], without a tree of every row in memory (a
/// frame of 50,000 rows x 30 columns made 1.5 million values).
pub(crate) fn write_json_pretty(
    df: &DataFrame,
    out: &mut impl std::io::Write,
) -> serde_json::Result<()> {
    serde_json::to_writer_pretty(out, &Rows(df))
}

/// A frame's rows, serialized as [`to_json`]'s array.
struct Rows<'a>(&'a DataFrame);

/// Row `.1` of a frame, serialized as [`to_json`]'s object.
struct Row<'a>(&'a DataFrame, usize);

impl Serialize for Rows<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut rows = serializer.serialize_seq(Some(self.0.height()))?;
        for row in 0..self.0.height() {
            rows.serialize_element(&Row(self.0, row))?;
        }
        rows.end()
    }
}

impl Serialize for Row<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let columns = self.0.columns();
        let mut object = serializer.serialize_map(Some(columns.len()))?;
        for c in columns {
            let value = c.get(self.1).unwrap_or(AnyValue::Null);
            object.serialize_entry(c.name().as_str(), &json_value(&value))?;
        }
        object.end()
    }
}

fn json_value(value: &AnyValue<'_>) -> Value {
    match value {
        AnyValue::Null => Value::Null,
        AnyValue::Boolean(b) => Value::Bool(*b),
        AnyValue::String(s) => Value::String((*s).to_owned()),
        AnyValue::StringOwned(s) => Value::String(s.to_string()),
        AnyValue::Float64(v) => {
            serde_json::Number::from_f64(tidy_float(*v)).map_or(Value::Null, Value::Number)
        }
        AnyValue::Float32(v) => {
            serde_json::Number::from_f64(f64::from(*v)).map_or(Value::Null, Value::Number)
        }
        AnyValue::Int64(v) => Value::from(*v),
        AnyValue::Int32(v) => Value::from(*v),
        AnyValue::UInt64(v) => Value::from(*v),
        AnyValue::UInt32(v) => Value::from(*v),
        other => Value::String(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::Column;

    #[test]
    fn written_row_by_row_as_the_whole_tree_prints() {
        let df = DataFrame::new_infer_height(vec![
            Column::new("model".into(), ["a,b", "c\"d"]),
            Column::new("success_pct".into(), [Some(50.0), None]),
            Column::new("total_cost_usd".into(), [0.1 + 0.2, f64::NAN]),
            Column::new("n".into(), [1u64, 2]),
        ])
        .unwrap();
        for df in [df.clone(), df.head(Some(0)), DataFrame::empty()] {
            let mut streamed = Vec::new();
            write_json_pretty(&df, &mut streamed).unwrap();
            let tree = serde_json::to_vec_pretty(&to_json(&df)).unwrap();
            assert_eq!(
                String::from_utf8(streamed).unwrap(),
                String::from_utf8(tree).unwrap()
            );
        }
    }
}
