-- CreateCall's admission under CALL_CONCURRENCY_LIMIT (src/voice/calls/concurrency.ts),
-- decided in the database: takes the project's admission lock, then counts the
-- project's calls in flight (the new one included) in a statement of its own, so
-- with a snapshot taken after the lock was granted (a VOLATILE PL/pgSQL function
-- in READ COMMITTED), and raises SQLSTATE SB429 (DETAIL: the others in flight)
-- when the project is over its limit. Sent in one pipeline with the call's insert
-- and the COMMIT, the lock is held with no round trip to the server's process.
CREATE OR REPLACE FUNCTION switchboard_admit_call(p_project text, p_limit integer) RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  n integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('project_calls:' || p_project));
  SELECT count(*)::integer INTO n FROM calls
    WHERE project_id = p_project AND state IN ('QUEUED', 'STARTING', 'RINGING', 'IN_PROGRESS');
  IF n - 1 >= p_limit THEN
    RAISE EXCEPTION 'concurrent call limit' USING ERRCODE = 'SB429', DETAIL = (n - 1)::text;
  END IF;
  RETURN n;
END
$$;
