"""The PostgreSQL ledger's schema, functions and privileges (SQL text).

Installed once per database by :func:`accounting.ledger.postgres.install_schema` (a
role that may create roles and schemas: the database administrator). Everything lives
in the schema ``dpcg``, owned by a ``NOLOGIN`` owner role. The analyst's role gets
``SELECT`` on the tables (to read, show and verify the ledger) and ``EXECUTE`` on the
``SECURITY DEFINER`` functions ``reserve``, ``charge`` and ``close_run`` only (and
``register`` where the installer lets analysts register new ids): no ``INSERT``,
``UPDATE``, ``DELETE`` or ``TRUNCATE`` on any table. The custodian's role gets
``register``, ``sign_head`` and ``bind_key`` (it registers datasets and writes head
signatures, which no analyst can write or remove).

Every append function takes one transaction-scoped advisory lock (the chain is one
sequence for the whole database), reads the head under it, assembles the entry's
canonical JSON from the caller's text segments and the values only the database
chooses (``seq``, ``prev_hash``, ``timestamp``), re-hashes it with ``sha256`` and
checks the entry against the chain. ``reserve`` re-derives the dataset's charge from
the chain rows themselves (the registration, run-open, mechanism and run-close entries'
hashed text) in exact rational arithmetic (``numeric`` numerators and denominators):
no editable total is read. See ``docs/ledger.md``, "PostgreSQL".
"""

from __future__ import annotations

#: Transaction-scoped advisory lock key every append takes (one chain per database).
APPEND_LOCK = 4_242_055

#: SQLSTATEs raised by the functions (class ``DP``), mapped to accounting.errors.
SQLSTATE_INVALID = "DPI01"
SQLSTATE_UNKNOWN_DATASET = "DPU01"
SQLSTATE_CONFLICT = "DPC01"
SQLSTATE_BUDGET = "DPB01"
SQLSTATE_RELATION = "DPR01"
SQLSTATE_CLOSED = "DPL01"
SQLSTATE_LIFETIME_RULE = "DPZ01"

#: The functions an analyst may call (besides reading the tables); ``register`` only
#: where the installer allows analysts to register new dataset ids (a team without a
#: custodian: :data:`REGISTER_FUNCTION`).
ANALYST_FUNCTIONS = (
    "dpcg.reserve(text, text)",
    "dpcg.charge(text, text[], text[])",
    "dpcg.close_run(text, text, text)",
    "dpcg.dataset_info(text)",
)
REGISTER_FUNCTION = "dpcg.register(text, text)"
#: The functions a custodian may call.
CUSTODIAN_FUNCTIONS = (
    "dpcg.register(text, text)",
    "dpcg.dataset_info(text)",
    "dpcg.sign_head(bigint, text, text)",
    "dpcg.bind_key(text)",
)

_ENTRY_KEYS = ("ARRAY['cost','data','dataset_id','kind','mechanism','params','prev_hash',"
               "'purpose','relation','run_id','seed_explicit','sensitivity','seq','timestamp']")


def _cost_ctes(where: str) -> str:
    """The CTEs both sum functions start with: the mechanism entries selected by
    ``where`` (``m``), the cost values cut out of their canonical prefix (``x``) and
    parsed into exact numerators/denominators (``q``, left open for the caller's
    further columns)."""
    return f"""WITH m AS (
  SELECT e.run_id, split_part(e.body, '}}', 1) AS pre FROM dpcg.entries e WHERE {where}
), x AS (
  SELECT m.run_id, split_part(split_part(m.pre, '"delta":"', 2), '"', 1) AS dt,
         split_part(split_part(m.pre, '"epsilon":', 2), ',', 1) AS ex,
         split_part(m.pre, '"rho":', 2) AS rx
  FROM m
), q AS (
  SELECT x.run_id, x.ex = 'null' AS en_null, x.rx = 'null' AS rn_null,
         CASE WHEN x.ex = 'null' THEN 0::numeric
              ELSE split_part(btrim(x.ex, '"'), '/', 1)::numeric END AS en,
         CASE WHEN x.ex = 'null' THEN 1::numeric
              ELSE coalesce(nullif(split_part(btrim(x.ex, '"'), '/', 2), ''), '1')::numeric
         END AS ed,
         split_part(x.dt, '/', 1)::numeric AS dn,
"""


def _mech_sums_sql(name: str, where: str) -> str:
    """A set-returning SQL function ``dpcg.<name>(p text)``: per run, the number of
    mechanism entries selected by ``where``, whether any lacks an epsilon or a rho, and
    the exact sums of their epsilons and deltas (``{numerator, denominator}``, reduced).

    Built-in string and numeric functions only (no per-row procedural call, no JSON
    parse, no regex): a mechanism entry's body starts with its cost object in canonical
    form, ``{"cost":{"delta":"p/q","epsilon":"p/q"|null,"rho":"p/q"|null}``, which
    ``charge`` checked byte for byte when it appended the entry; the values are cut out
    of that prefix. One aggregate gives the lcm of all the denominators, a second pass
    sums the numerators scaled to it per run, and each sum is reduced once."""
    return f"""CREATE FUNCTION dpcg.{name}(p text)
RETURNS TABLE (run_id text, n bigint, eps_null boolean, rho_null boolean, se numeric[],
               sd numeric[])
LANGUAGE sql STABLE AS $f$
{_cost_ctes(where)}         coalesce(nullif(split_part(x.dt, '/', 2), ''), '1')::numeric AS dd
  FROM x
), l AS MATERIALIZED (
  SELECT dpcg.lcm_agg(q.ed) AS le, dpcg.lcm_agg(q.dd) AS ld FROM q
), t AS (
  SELECT q.run_id, count(*) AS n, bool_or(q.en_null) AS eps_null,
         bool_or(q.rn_null) AS rho_null, min(l.le) AS le, min(l.ld) AS ld,
         sum(q.en * div(l.le, q.ed)) AS ne, sum(q.dn * div(l.ld, q.dd)) AS nd
  FROM q CROSS JOIN l GROUP BY q.run_id
)
SELECT t.run_id, t.n, t.eps_null, t.rho_null,
       ARRAY[div(t.ne, gcd(t.ne, t.le)), div(t.le, gcd(t.ne, t.le))],
       ARRAY[div(t.nd, gcd(t.nd, t.ld)), div(t.ld, gcd(t.nd, t.ld))]
FROM t
$f$"""


def _unit_sums_sql(name: str, where: str) -> str:
    """A set-returning SQL function ``dpcg.<name>(p text)`` for a ``zcdp`` lifetime: per
    run, the number of mechanism entries selected by ``where``, whether any has delta > 0
    (``unit_null``: no zCDP unit) and the exact sum of their unit rho, the smaller of
    their rho and eps^2/2 (``{numerator, denominator}``, reduced). Read from the same
    canonical cost prefix as :func:`_mech_sums_sql`; only called under a zcdp lifetime
    (a basic lifetime never pays for it)."""
    return f"""CREATE FUNCTION dpcg.{name}(p text)
RETURNS TABLE (run_id text, n bigint, unit_null boolean, su numeric[])
LANGUAGE sql STABLE AS $f$
{_cost_ctes(where)}         CASE WHEN x.rx = 'null' THEN 0::numeric
              ELSE split_part(btrim(x.rx, '"'), '/', 1)::numeric END AS rn,
         CASE WHEN x.rx = 'null' THEN 1::numeric
              ELSE coalesce(nullif(split_part(btrim(x.rx, '"'), '/', 2), ''), '1')::numeric
         END AS rd
  FROM x
), u AS (
  -- the unit rho of each entry: the smaller of its rho and eps^2/2 (0/1 for an entry
  -- with delta > 0 or no bound, flagged by u_null instead)
  SELECT q.run_id, (q.dn <> 0 OR (q.en_null AND q.rn_null)) AS u_null,
         CASE WHEN q.dn <> 0 OR (q.en_null AND q.rn_null) THEN 0::numeric
              WHEN q.rn_null OR (NOT q.en_null AND q.en * q.en * q.rd < 2 * q.ed * q.ed * q.rn)
              THEN q.en * q.en ELSE q.rn END AS un,
         CASE WHEN q.dn <> 0 OR (q.en_null AND q.rn_null) THEN 1::numeric
              WHEN q.rn_null OR (NOT q.en_null AND q.en * q.en * q.rd < 2 * q.ed * q.ed * q.rn)
              THEN 2 * q.ed * q.ed ELSE q.rd END AS ud
  FROM q
), l AS MATERIALIZED (
  SELECT dpcg.lcm_agg(u.ud) AS lu FROM u
), t AS (
  SELECT u.run_id, count(*) AS n, bool_or(u.u_null) AS unit_null, min(l.lu) AS lu,
         sum(u.un * div(l.lu, u.ud)) AS nu
  FROM u CROSS JOIN l GROUP BY u.run_id
)
SELECT t.run_id, t.n, t.unit_null,
       ARRAY[div(t.nu, gcd(t.nu, t.lu)), div(t.lu, gcd(t.nu, t.lu))]
FROM t
$f$"""


def schema_sql(owner: str) -> list[str]:
    """The statements creating the schema ``dpcg`` owned by ``owner`` (run as a role
    that is ``owner`` or a member of it; ``owner`` is an already quoted identifier)."""
    return [
        f"CREATE SCHEMA dpcg AUTHORIZATION {owner}",
        f"SET ROLE {owner}",
        "CREATE TABLE dpcg.metadata (key text PRIMARY KEY, value text NOT NULL)",
        # kind / dataset_id / run_id are copied from the hashed body by the functions
        # (the only writers) so that the chain rows of one dataset or run are found by
        # index; every value used for admission is read from the body itself.
        "CREATE TABLE dpcg.entries (seq bigint PRIMARY KEY, kind text NOT NULL, "
        "dataset_id text, run_id text, body text NOT NULL, hash text NOT NULL)",
        "CREATE INDEX entries_dataset ON dpcg.entries (dataset_id, kind)",
        "CREATE INDEX entries_run ON dpcg.entries (run_id, kind)",
        "CREATE TABLE dpcg.head_signatures (seq bigint PRIMARY KEY, hash text NOT NULL, "
        "signature text NOT NULL)",
        # History is append-only even for the owner's own sessions (defence in depth:
        # the analyst has no UPDATE/DELETE/TRUNCATE privilege in the first place).
        """CREATE FUNCTION dpcg._append_only() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  RAISE EXCEPTION 'the dpcg ledger is append-only: % on % refused', TG_OP, TG_TABLE_NAME
    USING ERRCODE = 'DPI01';
END $f$""",
        *[f"CREATE TRIGGER {t}_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON dpcg.{t} "
          "FOR EACH STATEMENT EXECUTE FUNCTION dpcg._append_only()"
          for t in ("entries", "head_signatures", "metadata")],
        # -- exact rationals: numeric[] {numerator, denominator}, denominator > 0 --------
        r"""CREATE FUNCTION dpcg._q(t text) RETURNS numeric[] LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE p text[];
BEGIN
  IF t IS NULL OR t !~ '^(0|[1-9][0-9]*)(/[1-9][0-9]*)?$' THEN
    RAISE EXCEPTION 'not a non-negative exact fraction in canonical form: %', t
      USING ERRCODE = 'DPI01';
  END IF;
  p := string_to_array(t, '/');
  IF array_length(p, 1) = 1 THEN RETURN ARRAY[p[1]::numeric, 1::numeric]; END IF;
  IF gcd(p[1]::numeric, p[2]::numeric) <> 1 OR p[2] = '1' THEN
    RAISE EXCEPTION 'fraction % is not in lowest terms', t USING ERRCODE = 'DPI01';
  END IF;
  RETURN ARRAY[p[1]::numeric, p[2]::numeric];
END $f$""",
        """CREATE FUNCTION dpcg._qadd(a numeric[], b numeric[]) RETURNS numeric[]
LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE n numeric; d numeric; g numeric;
BEGIN
  IF b IS NULL THEN RETURN a; END IF;
  IF a IS NULL THEN RETURN b; END IF;
  n := a[1] * b[2] + b[1] * a[2];
  d := a[2] * b[2];
  g := gcd(n, d);
  RETURN ARRAY[div(n, g), div(d, g)];
END $f$""",
        """CREATE FUNCTION dpcg._qle(a numeric[], b numeric[]) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $f$ SELECT a[1] * b[2] <= b[1] * a[2] $f$""",
        """CREATE FUNCTION dpcg._qtext(a numeric[]) RETURNS text LANGUAGE sql IMMUTABLE AS $f$
SELECT CASE WHEN a[2] = 1 THEN a[1]::text ELSE a[1]::text || '/' || a[2]::text END $f$""",
        "CREATE AGGREGATE dpcg.qsum(numeric[]) (SFUNC = dpcg._qadd, STYPE = numeric[], "
        "INITCOND = '{0,1}')",
        """CREATE FUNCTION dpcg._now() RETURNS text LANGUAGE sql VOLATILE AS $f$
SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') || '+00:00'
$f$""",
        # -- fast exact sums of mechanism costs (one pass of built-in numeric arithmetic:
        # the lcm of the denominators, then the sum of scaled numerators, reduced once)
        r"""CREATE FUNCTION dpcg._num(t text) RETURNS numeric LANGUAGE sql IMMUTABLE AS $f$
SELECT CASE WHEN t ~ '^(0|[1-9][0-9]*)(/[1-9][0-9]*)?$' THEN split_part(t, '/', 1)::numeric
            ELSE ('not an exact fraction: ' || coalesce(t, 'null'))::numeric END $f$""",
        r"""CREATE FUNCTION dpcg._den(t text) RETURNS numeric LANGUAGE sql IMMUTABLE AS $f$
SELECT CASE WHEN t ~ '^(0|[1-9][0-9]*)(/[1-9][0-9]*)?$'
            THEN coalesce(nullif(split_part(t, '/', 2), ''), '1')::numeric
            ELSE ('not an exact fraction: ' || coalesce(t, 'null'))::numeric END $f$""",
        "CREATE AGGREGATE dpcg.lcm_agg(numeric) (SFUNC = lcm, STYPE = numeric, INITCOND = '1')",
        *[_mech_sums_sql(name, where) for name, where in (
            ("_run_sums", "e.run_id = p AND e.kind = 'mechanism'"),
            ("_dataset_sums", "e.dataset_id = p AND e.kind = 'mechanism'"))],
        *[_unit_sums_sql(name, where) for name, where in (
            ("_run_units", "e.run_id = p AND e.kind = 'mechanism'"),
            ("_dataset_units", "e.dataset_id = p AND e.kind = 'mechanism'"))],
        # -- the charge of a dataset, re-derived from its chain rows ----------------------
        # (docs/ledger.md, "Lifetime charged by realized spend": an open run holds its
        # reservation; a closed run without a mechanism nothing; a closed basic run the
        # exact sums of its mechanisms' costs; anything else its reservation)
        # (under a zcdp lifetime, ``cr``: an open run its rho reservation; a closed run
        # without a mechanism nothing; a closed run the exact sum of its mechanisms' unit
        # rho when every one is a unit and the sum fits, else its rho reservation)
        """CREATE FUNCTION dpcg._charged(ds text, OUT ce numeric[], OUT cd numeric[],
  OUT re numeric[], OUT rd numeric[], OUT n_runs bigint, OUT cr numeric[])
LANGUAGE plpgsql STABLE AS $f$
DECLARE r record; be numeric[]; bd numeric[]; br numeric[]; zl boolean;
BEGIN
  -- a zcdp lifetime (its registration states the rule): only then are the unit sums read
  zl := EXISTS (SELECT 1 FROM dpcg.entries e WHERE e.kind = 'dataset' AND e.dataset_id = ds
                AND (e.body::jsonb) -> 'data' ? 'lifetime_rule');
  ce := '{0,1}'; cd := '{0,1}'; re := '{0,1}'; rd := '{0,1}'; n_runs := 0; cr := '{0,1}';
  -- one pass over the dataset's run-open and run-close rows, grouped by run, joined with
  -- the exact sums of its mechanism entries' costs
  FOR r IN
    SELECT g.rule, g.be, g.bd, g.br, g.closed, coalesce(m.n, 0) AS n,
           coalesce(m.eps_null, false) AS eps_null, m.se, m.sd,
           coalesce(u.unit_null, false) AS unit_null, u.su
    FROM (SELECT x.run_id,
                 min(x.j -> 'data' ->> 'rule') FILTER (WHERE x.kind = 'run-open') AS rule,
                 min(x.j -> 'data' -> 'budget' ->> 'epsilon')
                   FILTER (WHERE x.kind = 'run-open') AS be,
                 min(x.j -> 'data' -> 'budget' ->> 'delta')
                   FILTER (WHERE x.kind = 'run-open') AS bd,
                 min(x.j -> 'data' ->> 'rho') FILTER (WHERE x.kind = 'run-open') AS br,
                 bool_or(x.kind = 'run-close') AS closed
          FROM (SELECT e.run_id, e.kind, e.body::jsonb AS j FROM dpcg.entries e
                WHERE e.dataset_id = ds AND e.kind IN ('run-open', 'run-close')) x
          GROUP BY x.run_id) g
    LEFT JOIN dpcg._dataset_sums(ds) m ON m.run_id = g.run_id
    LEFT JOIN (SELECT * FROM dpcg._dataset_units(ds) WHERE zl) u ON u.run_id = g.run_id
  LOOP
    be := dpcg._q(r.be);
    bd := dpcg._q(r.bd);
    n_runs := n_runs + 1;
    re := dpcg._qadd(re, be);
    rd := dpcg._qadd(rd, bd);
    IF r.br IS NOT NULL THEN
      br := dpcg._q(r.br);
      IF NOT r.closed THEN
        cr := dpcg._qadd(cr, br);
      ELSIF r.n = 0 THEN
        NULL;
      ELSIF NOT r.unit_null AND dpcg._qle(r.su, br) THEN
        cr := dpcg._qadd(cr, r.su);
      ELSE
        cr := dpcg._qadd(cr, br);
      END IF;
    END IF;
    IF NOT r.closed THEN
      ce := dpcg._qadd(ce, be); cd := dpcg._qadd(cd, bd);
    ELSIF r.n = 0 THEN
      NULL;
    ELSIF r.rule = 'basic' AND NOT r.eps_null AND dpcg._qle(r.se, be)
          AND dpcg._qle(r.sd, bd) THEN
      ce := dpcg._qadd(ce, r.se); cd := dpcg._qadd(cd, r.sd);
    ELSE
      ce := dpcg._qadd(ce, be); cd := dpcg._qadd(cd, bd);
    END IF;
  END LOOP;
END $f$""",
        # -- assembling and appending one entry (callers hold the append lock) -----------
        rf"""CREATE FUNCTION dpcg._build(head text, mid text, ts text,
  OUT o_seq bigint, OUT o_body text, OUT o_j jsonb)
LANGUAGE plpgsql VOLATILE AS $f$
DECLARE s bigint; h text;
BEGIN
  SELECT e.seq, e.hash INTO s, h FROM dpcg.entries e ORDER BY e.seq DESC LIMIT 1;
  IF NOT FOUND THEN
    s := 0;
    SELECT m.value INTO h FROM dpcg.metadata m WHERE m.key = 'genesis_hash';
  END IF;
  IF h IS NULL THEN
    RAISE EXCEPTION 'the ledger has no genesis hash' USING ERRCODE = 'DPI01';
  END IF;
  o_seq := s + 1;
  IF head IS NULL OR mid IS NULL OR left(head, 8) <> '{{"cost":'
     OR right(head, 13) <> ',"prev_hash":' OR left(mid, 11) <> ',"purpose":'
     OR right(mid, 7) <> ',"seq":' THEN
    RAISE EXCEPTION 'malformed entry segments' USING ERRCODE = 'DPI01';
  END IF;
  o_body := head || '"' || h || '"' || mid || o_seq::text || ',"timestamp":"' || ts || '"}}';
  IF o_body ~ '[^ -~]' THEN
    RAISE EXCEPTION 'an entry is printable ASCII only (canonical JSON)'
      USING ERRCODE = 'DPI01';
  END IF;
  BEGIN
    o_j := o_body::jsonb;
  EXCEPTION WHEN others THEN
    RAISE EXCEPTION 'the entry is not valid JSON' USING ERRCODE = 'DPI01';
  END;
  IF jsonb_typeof(o_j) <> 'object'
     OR (SELECT count(*) FROM json_object_keys(o_body::json)) <> 14
     OR NOT (o_j ?& {_ENTRY_KEYS})
     OR o_j -> 'seq' <> to_jsonb(o_seq) OR o_j ->> 'prev_hash' IS DISTINCT FROM h
     OR o_j ->> 'timestamp' IS DISTINCT FROM ts
     OR jsonb_typeof(o_j -> 'kind') IS DISTINCT FROM 'string'
     OR jsonb_typeof(o_j -> 'dataset_id') IS DISTINCT FROM 'string'
     OR jsonb_typeof(o_j -> 'purpose') IS DISTINCT FROM 'string'
     OR (o_j ->> 'relation') NOT IN ('replace-one', 'add-remove')
     OR jsonb_typeof(o_j -> 'data') IS DISTINCT FROM 'object' THEN
    RAISE EXCEPTION 'the entry does not have the ledger''s fields' USING ERRCODE = 'DPI01';
  END IF;
END $f$""",
        """CREATE FUNCTION dpcg._insert(s bigint, body text, j jsonb) RETURNS text
LANGUAGE plpgsql VOLATILE AS $f$
DECLARE h text := encode(sha256(convert_to(body, 'UTF8')), 'hex');
BEGIN
  INSERT INTO dpcg.entries (seq, kind, dataset_id, run_id, body, hash)
  VALUES (s, j ->> 'kind', j ->> 'dataset_id', j ->> 'run_id', body, h);
  RETURN h;
END $f$""",
        """CREATE FUNCTION dpcg._budget(b jsonb, what text, OUT e numeric[], OUT d numeric[])
LANGUAGE plpgsql IMMUTABLE AS $f$
BEGIN
  IF jsonb_typeof(b) IS DISTINCT FROM 'object'
     OR (SELECT count(*) FROM jsonb_object_keys(b)) <> 2 THEN
    RAISE EXCEPTION '% must be {epsilon, delta}', what USING ERRCODE = 'DPI01';
  END IF;
  e := dpcg._q(b ->> 'epsilon');
  d := dpcg._q(b ->> 'delta');
  IF e[1] = 0 OR d[1] >= d[2] THEN
    RAISE EXCEPTION '% needs epsilon > 0 and delta in [0, 1)', what USING ERRCODE = 'DPI01';
  END IF;
END $f$""",
        """CREATE FUNCTION dpcg._no_fields(j jsonb, VARIADIC names text[]) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE n text;
BEGIN
  FOREACH n IN ARRAY names LOOP
    IF jsonb_typeof(j -> n) IS DISTINCT FROM 'null' THEN
      RAISE EXCEPTION 'a % entry has no %', j ->> 'kind', n USING ERRCODE = 'DPI01';
    END IF;
  END LOOP;
END $f$""",
        # -- register: a dataset entry, unless the id is registered ----------------------
        f"""CREATE FUNCTION dpcg.register(head text, mid text,
  OUT o_seq bigint, OUT o_hash text, OUT o_created boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE b record; reg jsonb; reg_seq bigint; lt record;
BEGIN
  PERFORM pg_advisory_xact_lock({APPEND_LOCK});
  SELECT * INTO b FROM dpcg._build(head, mid, dpcg._now());
  IF b.o_j ->> 'kind' <> 'dataset' THEN
    RAISE EXCEPTION 'register appends a dataset entry' USING ERRCODE = 'DPI01';
  END IF;
  PERFORM dpcg._no_fields(b.o_j, 'run_id', 'mechanism', 'params', 'sensitivity', 'cost',
                          'seed_explicit');
  SELECT e.seq, e.body::jsonb INTO reg_seq, reg FROM dpcg.entries e
  WHERE e.kind = 'dataset' AND e.dataset_id = b.o_j ->> 'dataset_id';
  IF FOUND THEN
    IF reg ->> 'relation' <> b.o_j ->> 'relation' THEN
      RAISE EXCEPTION 'dataset is registered under the % relation', reg ->> 'relation'
        USING ERRCODE = 'DPC01';
    END IF;
    o_seq := reg_seq; o_hash := NULL; o_created := false;
    RETURN;
  END IF;
  IF (SELECT count(*) FROM jsonb_object_keys(b.o_j -> 'data'))
       <> (CASE WHEN b.o_j -> 'data' ? 'lifetime_rule' THEN 4 ELSE 2 END)
     OR jsonb_typeof(b.o_j -> 'data' -> 'description') IS DISTINCT FROM 'string' THEN
    RAISE EXCEPTION 'a dataset entry holds {{lifetime, description}} (and for a zcdp '
      'lifetime {{lifetime_rule, lifetime_rho}})' USING ERRCODE = 'DPI01';
  END IF;
  SELECT * INTO lt FROM dpcg._budget(b.o_j -> 'data' -> 'lifetime', 'the lifetime');
  IF b.o_j -> 'data' ? 'lifetime_rule' THEN
    -- a zcdp lifetime: its rho is the client's conversion (re-checked by the verifier)
    IF b.o_j -> 'data' ->> 'lifetime_rule' IS DISTINCT FROM 'zcdp'
       OR NOT (b.o_j -> 'data' ? 'lifetime_rho') OR lt.d[1] = 0
       OR (dpcg._q(b.o_j -> 'data' ->> 'lifetime_rho'))[1] = 0 THEN
      RAISE EXCEPTION 'a zcdp lifetime needs delta > 0 and a rho > 0' USING ERRCODE = 'DPI01';
    END IF;
  END IF;
  o_seq := b.o_seq;
  o_hash := dpcg._insert(b.o_seq, b.o_body, b.o_j);
  o_created := true;
END $f$""",
        # -- reserve: a run-open entry, admitted on the charge re-derived from the chain --
        f"""CREATE FUNCTION dpcg.reserve(head text, mid text,
  OUT o_seq bigint, OUT o_hash text, OUT o_timestamp text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE b record; reg jsonb; bud record; lt record; ch record; rid text; ds text;
  zl boolean; rr numeric[]; lr numeric[];
BEGIN
  PERFORM pg_advisory_xact_lock({APPEND_LOCK});
  o_timestamp := dpcg._now();
  SELECT * INTO b FROM dpcg._build(head, mid, o_timestamp);
  ds := b.o_j ->> 'dataset_id';
  rid := b.o_j ->> 'run_id';
  IF b.o_j ->> 'kind' <> 'run-open' OR rid IS NULL OR rid !~ '^[0-9a-f]{{32}}$' THEN
    RAISE EXCEPTION 'reserve appends a run-open entry with a run id' USING ERRCODE = 'DPI01';
  END IF;
  PERFORM dpcg._no_fields(b.o_j, 'mechanism', 'params', 'sensitivity', 'cost');
  IF EXISTS (SELECT 1 FROM dpcg.entries e WHERE e.run_id = rid) THEN
    RAISE EXCEPTION 'run id % is already in the ledger', rid USING ERRCODE = 'DPI01';
  END IF;
  SELECT e.body::jsonb INTO reg FROM dpcg.entries e
  WHERE e.kind = 'dataset' AND e.dataset_id = ds;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'dataset is not registered' USING ERRCODE = 'DPU01';
  END IF;
  zl := reg -> 'data' ? 'lifetime_rule';
  IF jsonb_typeof(b.o_j -> 'seed_explicit') IS DISTINCT FROM 'boolean'
     OR (SELECT count(*) FROM jsonb_object_keys(b.o_j -> 'data'))
        <> (CASE WHEN zl THEN 4 ELSE 3 END)
     OR (zl AND NOT (b.o_j -> 'data' ? 'rho'))
     OR jsonb_typeof(b.o_j -> 'data' -> 'description') IS DISTINCT FROM 'string'
     OR (b.o_j -> 'data' ->> 'rule') NOT IN ('basic', 'zcdp') THEN
    RAISE EXCEPTION 'a run-open entry holds {{budget, rule, description}} (and its rho '
      'under a zcdp lifetime)' USING ERRCODE = 'DPI01';
  END IF;
  IF reg ->> 'relation' <> b.o_j ->> 'relation' THEN
    RAISE EXCEPTION 'the run is declared under another relation than its dataset'
      USING ERRCODE = 'DPR01';
  END IF;
  SELECT * INTO bud FROM dpcg._budget(b.o_j -> 'data' -> 'budget', 'the budget');
  IF b.o_j -> 'data' ->> 'rule' = 'zcdp' AND bud.d[1] = 0 THEN
    RAISE EXCEPTION 'the zcdp rule needs delta > 0' USING ERRCODE = 'DPI01';
  END IF;
  SELECT * INTO lt FROM dpcg._budget(reg -> 'data' -> 'lifetime', 'the lifetime');
  SELECT * INTO ch FROM dpcg._charged(ds);
  IF zl THEN
    -- a zcdp lifetime: the run's reservation in rho; a basic run must be pure and its rho
    -- is exactly eps^2/2; a zcdp run's rho is the client's conversion of its budget
    -- (re-checked by the verifier), and the lifetime filter is enforced on it here
    rr := dpcg._q(b.o_j -> 'data' ->> 'rho');
    lr := dpcg._q(reg -> 'data' ->> 'lifetime_rho');
    IF b.o_j -> 'data' ->> 'rule' = 'basic' AND bud.d[1] <> 0 THEN
      RAISE EXCEPTION 'under a zcdp lifetime a basic run must reserve delta = 0'
        USING ERRCODE = 'DPZ01';
    END IF;
    IF (b.o_j -> 'data' ->> 'rule' = 'basic'
        AND rr[1] * 2 * bud.e[2] * bud.e[2] <> bud.e[1] * bud.e[1] * rr[2]) THEN
      RAISE EXCEPTION 'the run''s rho is not the rho of its budget' USING ERRCODE = 'DPI01';
    END IF;
    IF NOT dpcg._qle(dpcg._qadd(ch.cr, rr), lr) THEN
      RAISE EXCEPTION 'the reservation would exceed the dataset''s zcdp lifetime (lifetime '
        'rho %; already charged rho %)', dpcg._qtext(lr), dpcg._qtext(ch.cr)
        USING ERRCODE = 'DPB01';
    END IF;
    o_seq := b.o_seq;
    o_hash := dpcg._insert(b.o_seq, b.o_body, b.o_j);
    RETURN;
  END IF;
  IF NOT (dpcg._qle(dpcg._qadd(ch.ce, bud.e), lt.e) AND dpcg._qle(dpcg._qadd(ch.cd, bud.d), lt.d))
  THEN
    RAISE EXCEPTION 'the reservation would exceed the dataset''s lifetime (lifetime '
      'epsilon %, delta %; already charged epsilon %, delta %)',
      dpcg._qtext(lt.e), dpcg._qtext(lt.d), dpcg._qtext(ch.ce), dpcg._qtext(ch.cd)
      USING ERRCODE = 'DPB01';
  END IF;
  o_seq := b.o_seq;
  o_hash := dpcg._insert(b.o_seq, b.o_body, b.o_j);
END $f$""",
        # -- the run an entry belongs to (open, its budget and rule) ---------------------
        """CREATE FUNCTION dpcg._open_run(rid text, OUT ro jsonb, OUT closed boolean)
LANGUAGE plpgsql STABLE AS $f$
BEGIN
  SELECT e.body::jsonb INTO ro FROM dpcg.entries e WHERE e.run_id = rid AND e.kind = 'run-open';
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no run % in the ledger', rid USING ERRCODE = 'DPI01';
  END IF;
  closed := EXISTS (SELECT 1 FROM dpcg.entries e WHERE e.run_id = rid AND e.kind = 'run-close');
END $f$""",
        """CREATE FUNCTION dpcg._same_run(j jsonb, ro jsonb) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $f$
BEGIN
  IF j ->> 'run_id' IS DISTINCT FROM ro ->> 'run_id'
     OR j ->> 'dataset_id' IS DISTINCT FROM ro ->> 'dataset_id' THEN
    RAISE EXCEPTION 'the entry names another run or dataset' USING ERRCODE = 'DPI01';
  END IF;
  IF j ->> 'relation' IS DISTINCT FROM ro ->> 'relation' THEN
    RAISE EXCEPTION 'the entry is declared under another relation than its run'
      USING ERRCODE = 'DPR01';
  END IF;
END $f$""",
        # -- charge: mechanism (and output) entries of one open run, all or none --------
        f"""CREATE FUNCTION dpcg.charge(rid text, heads text[], mids text[])
RETURNS TABLE (o_seq bigint, o_hash text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE run record; b record; i int; c jsonb; bud record; rule text;
  se numeric[]; sd numeric[]; eps_null boolean; rho_null boolean; of_seq bigint; ts text;
  rr numeric[]; su numeric[]; unit_null boolean; en numeric[]; rn numeric[]; un numeric[];
BEGIN
  PERFORM pg_advisory_xact_lock({APPEND_LOCK});
  IF heads IS NULL OR mids IS NULL OR cardinality(heads) <> cardinality(mids)
     OR cardinality(heads) = 0 THEN
    RAISE EXCEPTION 'charge needs one or more entries' USING ERRCODE = 'DPI01';
  END IF;
  SELECT * INTO run FROM dpcg._open_run(rid);
  IF run.closed THEN
    RAISE EXCEPTION 'run % is closed', rid USING ERRCODE = 'DPL01';
  END IF;
  ts := run.ro ->> 'timestamp';
  rule := run.ro -> 'data' ->> 'rule';
  SELECT * INTO bud FROM dpcg._budget(run.ro -> 'data' -> 'budget', 'the budget');
  -- the run's spending so far, re-derived from its mechanism entries
  SELECT m.se, m.sd, m.eps_null, m.rho_null INTO se, sd, eps_null, rho_null
  FROM dpcg._run_sums(rid) m;
  IF NOT FOUND THEN
    se := '{{0,1}}'; sd := '{{0,1}}'; eps_null := false; rho_null := false;
  END IF;
  -- under a zcdp lifetime the run-open entry holds the run's reservation in rho (reserve
  -- admitted it): every mechanism must be a unit and their unit rho must fit it
  rr := CASE WHEN run.ro -> 'data' ? 'rho' THEN dpcg._q(run.ro -> 'data' ->> 'rho') END;
  unit_null := false; su := '{{0,1}}';
  IF rr IS NOT NULL THEN
    SELECT u.unit_null, u.su INTO unit_null, su FROM dpcg._run_units(rid) u;
    IF NOT FOUND THEN
      unit_null := false; su := '{{0,1}}';
    END IF;
  END IF;
  FOR i IN 1 .. cardinality(heads) LOOP
    SELECT * INTO b FROM dpcg._build(heads[i], mids[i], ts);
    PERFORM dpcg._same_run(b.o_j, run.ro);
    IF jsonb_typeof(b.o_j -> 'seed_explicit') IS DISTINCT FROM 'boolean'
       AND b.o_j ->> 'kind' = 'mechanism' THEN
      RAISE EXCEPTION 'a mechanism entry says whether its seed was explicit'
        USING ERRCODE = 'DPI01';
    END IF;
    IF b.o_j ->> 'kind' = 'mechanism' THEN
      c := b.o_j -> 'cost';
      IF jsonb_typeof(c) IS DISTINCT FROM 'object'
         OR (SELECT count(*) FROM jsonb_object_keys(c)) <> 3
         OR NOT (c ?& ARRAY['epsilon', 'delta', 'rho'])
         -- the cost object first and in canonical form, byte for byte (the sums read it
         -- from this prefix: dpcg._run_sums / _dataset_sums)
         OR split_part(b.o_body, '}}', 1) || '}}' IS DISTINCT FROM
            '{{"cost":{{"delta":' || to_json(c ->> 'delta')::text || ',"epsilon":'
            || coalesce(to_json(c ->> 'epsilon')::text, 'null') || ',"rho":'
            || coalesce(to_json(c ->> 'rho')::text, 'null') || '}}'
         OR jsonb_typeof(b.o_j -> 'mechanism') IS DISTINCT FROM 'string'
         OR jsonb_typeof(b.o_j -> 'params') IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'a mechanism entry has a mechanism, params and a cost'
          USING ERRCODE = 'DPI01';
      END IF;
      en := NULL; rn := NULL;
      IF jsonb_typeof(c -> 'epsilon') = 'string' THEN
        en := dpcg._q(c ->> 'epsilon');
        se := dpcg._qadd(se, en);
      ELSE
        eps_null := true;
      END IF;
      IF jsonb_typeof(c -> 'rho') = 'string' THEN
        rn := dpcg._q(c ->> 'rho');
      ELSE
        rho_null := true;
      END IF;
      sd := dpcg._qadd(sd, dpcg._q(c ->> 'delta'));
      IF rr IS NOT NULL THEN
        IF (dpcg._q(c ->> 'delta'))[1] <> 0 OR (en IS NULL AND rn IS NULL) OR unit_null THEN
          RAISE EXCEPTION 'under a zcdp lifetime a mechanism with delta > 0 that is not '
            'zCDP cannot be a unit' USING ERRCODE = 'DPZ01';
        END IF;
        un := rn;
        IF en IS NOT NULL AND (rn IS NULL OR en[1] * en[1] * rn[2] < 2 * en[2] * en[2] * rn[1])
        THEN
          un := ARRAY[en[1] * en[1], 2 * en[2] * en[2]];
        END IF;
        su := dpcg._qadd(su, un);
        IF NOT dpcg._qle(su, rr) THEN
          RAISE EXCEPTION 'the entries would exceed the run''s rho reservation under its '
            'dataset''s zcdp lifetime' USING ERRCODE = 'DPB01';
        END IF;
      END IF;
      IF rule = 'basic' AND (eps_null OR NOT dpcg._qle(se, bud.e) OR NOT dpcg._qle(sd, bud.d))
      THEN
        RAISE EXCEPTION 'the entries would exceed the run''s reservation under the basic rule'
          USING ERRCODE = 'DPB01';
      END IF;
      IF rule = 'zcdp' AND (rho_null OR NOT dpcg._qle(sd, bud.d)) THEN
        RAISE EXCEPTION 'the entries would exceed the run''s reservation under the zcdp rule'
          USING ERRCODE = 'DPB01';
      END IF;
    ELSIF b.o_j ->> 'kind' = 'output' THEN
      PERFORM dpcg._no_fields(b.o_j, 'mechanism', 'params', 'sensitivity', 'cost',
                              'seed_explicit');
      IF jsonb_typeof(b.o_j -> 'data' -> 'of_seq') IS DISTINCT FROM 'number'
         OR (SELECT count(*) FROM jsonb_object_keys(b.o_j -> 'data')) <> 2
         OR NOT (b.o_j -> 'data' ? 'output') THEN
        RAISE EXCEPTION 'an output entry holds {{of_seq, output}}' USING ERRCODE = 'DPI01';
      END IF;
      of_seq := (b.o_j -> 'data' ->> 'of_seq')::bigint;
      IF NOT EXISTS (SELECT 1 FROM dpcg.entries e WHERE e.seq = of_seq AND e.run_id = rid
                     AND e.kind = 'mechanism')
         OR EXISTS (SELECT 1 FROM dpcg.entries e WHERE e.run_id = rid AND e.kind = 'output'
                    AND ((e.body::jsonb) -> 'data' ->> 'of_seq')::bigint = of_seq) THEN
        RAISE EXCEPTION 'an output refers to a mechanism entry of its run without an output'
          USING ERRCODE = 'DPI01';
      END IF;
    ELSE
      RAISE EXCEPTION 'charge appends mechanism and output entries' USING ERRCODE = 'DPI01';
    END IF;
    o_seq := b.o_seq;
    o_hash := dpcg._insert(b.o_seq, b.o_body, b.o_j);
    RETURN NEXT;
  END LOOP;
END $f$""",
        # -- close_run: the run-close entry (a closed run is left as it is) -------------
        f"""CREATE FUNCTION dpcg.close_run(rid text, head text, mid text,
  OUT o_seq bigint, OUT o_hash text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE run record; b record;
BEGIN
  PERFORM pg_advisory_xact_lock({APPEND_LOCK});
  SELECT * INTO run FROM dpcg._open_run(rid);
  IF run.closed THEN
    RETURN;
  END IF;
  SELECT * INTO b FROM dpcg._build(head, mid, run.ro ->> 'timestamp');
  PERFORM dpcg._same_run(b.o_j, run.ro);
  PERFORM dpcg._no_fields(b.o_j, 'mechanism', 'params', 'sensitivity', 'cost',
                          'seed_explicit');
  IF b.o_j ->> 'kind' <> 'run-close'
     OR (SELECT count(*) FROM jsonb_object_keys(b.o_j -> 'data')) <> 1
     OR (b.o_j -> 'data' ->> 'status') NOT IN ('completed', 'budget-exhausted', 'error') THEN
    RAISE EXCEPTION 'close_run appends a run-close entry with a final status'
      USING ERRCODE = 'DPI01';
  END IF;
  o_seq := b.o_seq;
  o_hash := dpcg._insert(b.o_seq, b.o_body, b.o_j);
END $f$""",
        # -- reading a dataset's totals (re-derived from the chain) ---------------------
        """CREATE FUNCTION dpcg.dataset_info(ds text) RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE reg jsonb; ch record;
BEGIN
  SELECT e.body::jsonb INTO reg FROM dpcg.entries e
  WHERE e.kind = 'dataset' AND e.dataset_id = ds;
  IF NOT FOUND THEN RETURN NULL; END IF;
  SELECT * INTO ch FROM dpcg._charged(ds);
  RETURN ARRAY[reg -> 'data' -> 'lifetime' ->> 'epsilon', reg -> 'data' -> 'lifetime' ->> 'delta',
               reg ->> 'relation', reg -> 'data' ->> 'description',
               dpcg._qtext(ch.re), dpcg._qtext(ch.rd), ch.n_runs::text,
               dpcg._qtext(ch.ce), dpcg._qtext(ch.cd),
               reg -> 'data' ->> 'lifetime_rule', reg -> 'data' ->> 'lifetime_rho',
               dpcg._qtext(ch.cr)];
END $f$""",
        # -- the custodian's functions ---------------------------------------------------
        f"""CREATE FUNCTION dpcg.sign_head(s bigint, h text, sig text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
  PERFORM pg_advisory_xact_lock({APPEND_LOCK});
  IF NOT EXISTS (SELECT 1 FROM dpcg.metadata m WHERE m.key = 'signing_public_key') THEN
    RAISE EXCEPTION 'the ledger is not bound to a key' USING ERRCODE = 'DPI01';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM dpcg.entries e WHERE e.seq = s AND e.hash = h) THEN
    RAISE EXCEPTION 'no entry % with that hash', s USING ERRCODE = 'DPI01';
  END IF;
  IF sig IS NULL OR sig !~ '^[0-9a-f]{{128}}$' THEN
    RAISE EXCEPTION 'a signature is 64 bytes of hex' USING ERRCODE = 'DPI01';
  END IF;
  INSERT INTO dpcg.head_signatures (seq, hash, signature) VALUES (s, h, sig)
  ON CONFLICT (seq) DO NOTHING;
  RETURN FOUND;
END $f$""",
        f"""CREATE FUNCTION dpcg.bind_key(pub text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE have text;
BEGIN
  PERFORM pg_advisory_xact_lock({APPEND_LOCK});
  IF pub IS NULL OR pub !~ '^[0-9a-f]{{64}}$' THEN
    RAISE EXCEPTION 'a public key is 32 bytes of hex' USING ERRCODE = 'DPI01';
  END IF;
  SELECT m.value INTO have FROM dpcg.metadata m WHERE m.key = 'signing_public_key';
  IF FOUND AND have <> pub THEN
    RAISE EXCEPTION 'the ledger is bound to another key' USING ERRCODE = 'DPC01';
  END IF;
  IF NOT FOUND THEN
    INSERT INTO dpcg.metadata (key, value) VALUES ('signing_public_key', pub);
  END IF;
END $f$""",
        "RESET ROLE",
    ]


def grant_sql(owner: str, analysts: list[str], custodians: list[str],
              analysts_register: bool = False) -> list[str]:
    """Privileges: nothing for PUBLIC; readers get SELECT; analysts and custodians get
    EXECUTE on their functions only (identifiers already quoted); analysts may register
    new dataset ids only with ``analysts_register``."""
    readers = ", ".join([*analysts, *custodians])
    out = [
        "REVOKE ALL ON SCHEMA dpcg FROM PUBLIC",
        "REVOKE ALL ON ALL TABLES IN SCHEMA dpcg FROM PUBLIC",
        "REVOKE ALL ON ALL FUNCTIONS IN SCHEMA dpcg FROM PUBLIC",
    ]
    if readers:
        out += [f"GRANT USAGE ON SCHEMA dpcg TO {readers}",
                f"GRANT SELECT ON dpcg.metadata, dpcg.entries, dpcg.head_signatures TO {readers}"]
    for fn in (*ANALYST_FUNCTIONS, *((REGISTER_FUNCTION,) if analysts_register else ())):
        out += [f"GRANT EXECUTE ON FUNCTION {fn} TO {a}" for a in analysts]
    for fn in CUSTODIAN_FUNCTIONS:
        out += [f"GRANT EXECUTE ON FUNCTION {fn} TO {c}" for c in custodians]
    del owner
    return out
