//! Frames as JSON: an array of objects, one per row, keys in column order, stable schema.

use polars::prelude::{AnyValue, DataFrame};
use serde_json::{Map, Value};

use super::tidy_float;

/// A frame as a JSON array of objects, one per row, keys in column order.
pub fn to_json(df: &DataFrame) -> Value {
    let columns = df.columns();
    let rows = (0..df.height())
        .map(|row| {
            let mut object = Map::new();
            for c in columns {
                let value = c.get(row).unwrap_or(AnyValue::Null);
                object.insert(c.name().to_string(), json_value(&value));
            }
            Value::Object(object)
        })
        .collect();
    Value::Array(rows)
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
