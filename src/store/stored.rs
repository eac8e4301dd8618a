//! Values a column stores by name (a run's kind and status, a batch's API), read strictly.
//!
//! Each type is written with `ToSql` and read with `FromSql` ([`by_name`]); a name this
//! version of track does not know is an error naming its row ([`UnknownInRow`], through
//! [`in_row`]), never a default: a run read as `failed` because a newer track wrote another
//! status, or a batch left unfollowed because its API was unreadable, would misreport or lose
//! what is stored.

use rusqlite::types::{FromSqlError, FromSqlResult, ToSqlOutput, ValueRef};

/// A stored name that names nothing of its type; the error `FromSql` gives.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{value}`")]
pub struct UnknownName {
    /// What the name should be ("run status").
    pub what: &'static str,
    pub value: String,
}

/// A row holding a name its type does not know: a database written by a newer track, or
/// damaged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "row {id} of table `{table}` holds {what} `{value}` in column `{column}`, which this track does not know: the database was written by a newer track, or is damaged"
)]
pub struct UnknownInRow {
    pub table: &'static str,
    pub id: i64,
    pub column: String,
    /// What the name should be ("run status").
    pub what: &'static str,
    pub value: String,
}

/// The value of type `T` a stored text names, as `FromSql` reads it: `parse` is the type's
/// strict reading of its own stored names (never a case-folded or friendlier spelling).
pub(crate) fn by_name<T>(
    value: ValueRef<'_>,
    what: &'static str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> FromSqlResult<T> {
    let name = value.as_str()?;
    parse(name).ok_or_else(|| {
        FromSqlError::Other(Box::new(UnknownName {
            what,
            value: name.to_owned(),
        }))
    })
}

/// A name as `ToSql` writes it.
pub(crate) fn name(name: &'static str) -> ToSqlOutput<'static> {
    ToSqlOutput::Borrowed(ValueRef::Text(name.as_bytes()))
}

/// Column `idx` of row `r` (whose id is `id`, in `table`) as a `T`; an unknown name there is
/// an [`UnknownInRow`] (which the store's errors show as it is), other errors are as they were.
pub(crate) fn in_row<T: rusqlite::types::FromSql>(
    r: &rusqlite::Row<'_>,
    idx: usize,
    table: &'static str,
    id: i64,
) -> rusqlite::Result<T> {
    r.get(idx).map_err(|error| match error {
        rusqlite::Error::FromSqlConversionFailure(i, ty, source) => {
            match source.downcast::<UnknownName>() {
                Ok(unknown) => {
                    let column = r
                        .as_ref()
                        .column_name(idx)
                        .map_or_else(|_| idx.to_string(), str::to_owned);
                    rusqlite::Error::FromSqlConversionFailure(
                        i,
                        ty,
                        Box::new(UnknownInRow {
                            table,
                            id,
                            column,
                            what: unknown.what,
                            value: unknown.value,
                        }),
                    )
                }
                Err(source) => rusqlite::Error::FromSqlConversionFailure(i, ty, source),
            }
        }
        other => other,
    })
}
