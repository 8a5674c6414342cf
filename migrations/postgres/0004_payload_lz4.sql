-- Payloads are compressed with lz4 instead of the default pglz: pglz was
-- PostgreSQL's top user-space cost in the ingest benchmark (BENCHMARKS.md),
-- and lz4 compresses XML several times faster at a similar ratio. Only new
-- rows are affected. A server built without lz4 keeps pglz: the
-- migration must not stop a deployment over an optimisation.
DO $$
BEGIN
    ALTER TABLE messages ALTER COLUMN payload SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
    RAISE NOTICE 'lz4 is not available here; payloads stay pglz-compressed';
END
$$;
