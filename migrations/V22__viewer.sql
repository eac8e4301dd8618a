-- V22: what `track view` (issue 30) reads page by page.
--
-- 1. A run's grid is paged by case: its results of a few cases, its cases of one outcome, in
--    case order, each found through an index rather than by reading the whole run. Partial
--    (`template_index >= 0`, true of every row): only a query that says so uses them, so the
--    plans (and row orders) of every other query of a run stay what they were. (On another
--    column than `prompt_index`, so that the condition is no range on it that SQLite would
--    prefer to a query's list of cases.)
CREATE INDEX bench_results_by_case ON bench_results (run_id, prompt_index, status, template_index)
    WHERE template_index >= 0;
CREATE INDEX bench_results_by_status ON bench_results (run_id, status, prompt_index, template_index)
    WHERE template_index >= 0;
-- A search finds calls; their results are found by call.
CREATE INDEX bench_results_by_call ON bench_results (call_id) WHERE call_id IS NOT NULL;

-- 2. Full-text search over what each answered call asked (system prompt and messages' text,
--    the case's values rendered in them) and what it answered. Contentless: the texts stay in
--    `blobs`; the index holds only their words, under the call's id. Kept up to date by
--    triggers as calls are stored (a run, a batch's collection, a merge).
CREATE VIRTUAL TABLE call_text USING fts5 (request, answer, content = '', contentless_delete = 1);
INSERT INTO call_text (rowid, request, answer)
SELECT c.id,
    (SELECT group_concat(t.value, char(10))
     FROM blobs b, json_tree(CASE WHEN json_valid(CAST(b.content AS TEXT))
                                  THEN CAST(b.content AS TEXT) ELSE '{}' END) t
     WHERE b.sha256 = c.cache_key AND t.key IN ('system', 'text') AND t.type = 'text'),
    (SELECT CAST(content AS TEXT) FROM blobs WHERE sha256 = c.response_sha256)
FROM calls c WHERE c.status = 'ok';
CREATE TRIGGER call_text_insert AFTER INSERT ON calls WHEN new.status = 'ok' BEGIN
    INSERT INTO call_text (rowid, request, answer) VALUES (new.id,
        (SELECT group_concat(t.value, char(10))
         FROM blobs b, json_tree(CASE WHEN json_valid(CAST(b.content AS TEXT))
                                      THEN CAST(b.content AS TEXT) ELSE '{}' END) t
         WHERE b.sha256 = new.cache_key AND t.key IN ('system', 'text') AND t.type = 'text'),
        (SELECT CAST(content AS TEXT) FROM blobs WHERE sha256 = new.response_sha256));
END;
CREATE TRIGGER call_text_delete AFTER DELETE ON calls WHEN old.status = 'ok' BEGIN
    DELETE FROM call_text WHERE rowid = old.id;
END;
