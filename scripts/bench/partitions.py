"""`make bench` and PostgreSQL's time partitions (docs/scale.md,
"Partitioning").

A new database has one first partition per table that holds everything up
to tomorrow (`<table>_p_initial`, made by migration 0012), and the hub
creates daily partitions ahead from there. A database that has run for
months has a partition per day behind it too. `relayout` gives the
benchmark database that shape before anything is stored: the empty first
partitions end `days_back` days ago, and every day since has its own
partitions, named and bounded as the hub names and bounds them
(crates/edihub-store/src/partitions.rs). S6's stored messages then fall
into the partition of their day, as they would have.

Scenario T measures retention by dropping a partition: one day of
`BENCH_T_ROWS` messages (5,000,000), older than `retention.messages_days`,
is dropped by the hub's retention task while S1's load runs. It reports the
time of the drop itself (detach and drop of the day's three partitions, as
the hub logs it) and S1's rate per second around it against the run's
median second.

The day is dropped cold by default: its files are put out of the page
cache first (`evict`), since a day past the retention has not been read
since its windows closed, weeks before, on a hub whose retention is larger
than its memory. Freeing cached pages is most of what a `DROP TABLE`
costs in CPU;
`BENCH_T_HOT=1` keeps them cached, the worst case.
"""
import bisect
import datetime
import os
import re
import statistics
import subprocess
import threading
import time

FAMILIES = {"messages": True, "deliveries": True, "delivery_attempts": True, "audit_events": False}


def relayout_sql(days_back, initial_days_back=120, days_ahead=1):
    """The first partitions narrowed to end `initial_days_back` days ago
    (UTC midnight), no partition between (a day there is made when
    something is stored in it, as the hub would), and one partition per day
    from `days_back` days ago to `days_ahead` days after today. Only for a
    database that has stored nothing yet (the first partitions are detached
    and attached again, which checks their rows). Nothing is older than the
    retention, so the hub's own retention runs drop nothing while S1-S6 run."""
    arms = []
    for table, by_id in FAMILIES.items():
        bound = "edihub_uuid_bound({})::text" if by_id else "({})::text"
        arms.append(f"""
    IF EXISTS (SELECT 1 FROM pg_class WHERE relname = '{table}_p_initial') THEN
        EXECUTE 'ALTER TABLE {table} DETACH PARTITION {table}_p_initial';
        EXECUTE format('ALTER TABLE {table} ATTACH PARTITION {table}_p_initial FOR VALUES FROM (MINVALUE) TO (%L)',
                       {bound.format("initial")});
    END IF;
    d := first;
    WHILE d < today + interval '{days_ahead} days' LOOP
        name := '{table}_p' || to_char(d AT TIME ZONE 'UTC', 'YYYYMMDD');
        IF NOT EXISTS (SELECT 1 FROM pg_class WHERE relname = name) THEN
            EXECUTE format('CREATE TABLE %I (LIKE {table} INCLUDING DEFAULTS INCLUDING COMPRESSION INCLUDING STORAGE)', name);
            EXECUTE format('ALTER TABLE {table} ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', name,
                           {bound.format("d")}, {bound.format("d + interval '1 day'")});
        END IF;
        d := d + interval '1 day';
    END LOOP;""")
    return f"""DO $$
DECLARE
    today timestamptz := date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    first timestamptz := today - interval '{days_back} days';
    initial timestamptz := today - interval '{initial_days_back} days';
    d timestamptz;
    name text;
BEGIN{''.join(arms)}
END
$$;"""


def day_start(days_ago):
    today = datetime.datetime.now(datetime.timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - datetime.timedelta(days=days_ago)


def day_partition(table, day):
    return f"{table}_p{day.strftime('%Y%m%d')}"


def load_day_sql(tenant, env, day, n, lo, hi):
    """Rows lo..hi of n messages received in the day starting at `day`,
    into the detached table that becomes its messages partition: ids as
    edihub mints them (UUIDv7 of the receive time), windows long over (no
    claim keeps the day), no packet siblings."""
    t0 = day.strftime("%Y-%m-%d %H:%M:%S+00")
    return f"""INSERT INTO {day_partition('messages', day)} (id, tenant_id, environment_id, message_type, mestyp, docnum,
    sender, key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key,
    provider_event_id, packet_index, content_type, payload, received_at)
SELECT (lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7' || substr(fp, 1, 3)
        || '8' || substr(fp, 4, 15))::uuid,
       '{tenant}', '{env}', 'ORDERS05', 'ORDERS', lpad(g::text, 16, '0'), 'Q01CLNT100', fp, 'key_fields',
       t + interval '168 hours',
       jsonb_build_array(jsonb_build_object('path', 'E1EDK01.BELNR', 'values', jsonb_build_array('B' || g))),
       NULL, NULL, 0, 'application/xml',
       convert_to(repeat('<E1EDP01><POSEX>' || g || '</POSEX></E1EDP01>', 4), 'UTF8'), t
FROM generate_series({lo}, {hi}) AS g,
     LATERAL (SELECT md5('t-' || g) || md5('u-' || g) AS fp,
                     '{t0}'::timestamptz + interval '86399 seconds' * (g::float8 / {n}) AS t) AS x;
"""


def load_day(psql, psql_cmd, work, tenant, env, days_ago, n, log):
    """Creates the day's partitions of the messages family detached, fills
    the messages one with `n` rows (two sessions at once), attaches them all
    (which builds the parent's indexes on it) and analyses it. Returns the
    day and the seconds taken."""
    t = time.time()
    day = day_start(days_ago)
    lo, hi = f"edihub_uuid_bound('{day.isoformat()}')", f"edihub_uuid_bound('{(day + datetime.timedelta(days=1)).isoformat()}')"
    for table in ("messages", "deliveries", "delivery_attempts"):
        name = day_partition(table, day)
        psql(f"DROP TABLE IF EXISTS {name}; "
             f"CREATE TABLE {name} (LIKE {table} INCLUDING DEFAULTS INCLUDING COMPRESSION INCLUDING STORAGE)")
    half = n // 2
    procs = []
    for i, (a, b) in enumerate(((1, half), (half + 1, n))):
        path = os.path.join(work, f"t-day-{i}.sql")
        with open(path, "w") as f:
            f.write(load_day_sql(tenant, env, day, n, a, b))
        procs.append(subprocess.Popen(psql_cmd + ["-f", path]))
    if any(p.wait() for p in procs):
        raise SystemExit("T: loading the day failed")
    for table in ("messages", "deliveries", "delivery_attempts"):
        psql(f"ALTER TABLE {table} ATTACH PARTITION {day_partition(table, day)} FOR VALUES FROM ({lo}) TO ({hi})")
    psql(f"VACUUM ANALYZE {day_partition('messages', day)}")
    psql("CHECKPOINT")
    log(f"T: {n:,} messages in {day_partition('messages', day)}, loaded and attached in {time.time() - t:.0f} s")
    return day, time.time() - t


def day_files(psql, pg_data, day):
    """The files of the day's partitions: every table of the messages
    family, its indexes, its TOAST table and that table's index, with every
    segment and fork of each."""
    names = ", ".join(f"'{day_partition(t, day)}'" for t in ("messages", "deliveries", "delivery_attempts"))
    rels = psql(f"""WITH t AS (SELECT oid, reltoastrelid FROM pg_class WHERE relname IN ({names})),
        r AS (SELECT oid FROM t UNION SELECT reltoastrelid FROM t WHERE reltoastrelid <> 0
              UNION SELECT indexrelid FROM pg_index
                    WHERE indrelid IN (SELECT oid FROM t UNION SELECT reltoastrelid FROM t))
        SELECT pg_relation_filepath(oid) FROM r""").split()
    # Without tablespaces they share one folder: each folder is listed once.
    folders = {os.path.dirname(os.path.join(pg_data, rel)) for rel in rels}
    listing = {folder: os.listdir(folder) for folder in folders}
    files = []
    for rel in rels:
        folder, node = os.path.split(os.path.join(pg_data, rel))
        own = re.compile(re.escape(node) + r"(_(fsm|vm|init))?(\.\d+)?$")
        files.extend(os.path.join(folder, f) for f in listing[folder] if own.match(f))
    return files


def cached_mb(files):
    """MB of `files` on disk and MB of them in the page cache (util-linux `fincore`)."""
    out = subprocess.run(["fincore", "-b", "-n", "-o", "RES,SIZE"] + files,
                         capture_output=True, text=True, check=True).stdout.split()
    res, size = out[0::2], out[1::2]
    return sum(map(int, size)) / 2**20, sum(map(int, res)) / 2**20


def evict(files):
    """Puts `files` out of the page cache. Only clean pages go, so the load's
    CHECKPOINT must have written them first."""
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


class Sampler:
    """Messages accepted so far, read from the hub's metrics every `every` seconds."""

    def __init__(self, server, every=0.25):
        self.server, self.every = server, every
        self.samples = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            try:
                m = self.server.metrics()
                n = sum(v for k, v in m.items() if k.startswith("edihub_messages_accepted_total"))
                self.samples.append((time.time(), n))
            except OSError:
                pass
            self.stop.wait(self.every)

    def finish(self):
        self.stop.set()
        self.thread.join()
        return self.samples


def count_at(samples, x):
    """Messages accepted by time x, interpolated between the samples."""
    i = max(1, min(bisect.bisect_left(samples, (x,)), len(samples) - 1))
    (t0, n0), (t1, n1) = samples[i - 1], samples[i]
    return n0 if t1 == t0 else n0 + (n1 - n0) * (x - t0) / (t1 - t0)


def per_second(samples):
    """(start, messages) of each whole second between the first and last sample."""
    if len(samples) < 2:
        return []
    out, t = [], samples[0][0]
    while t + 1 <= samples[-1][0]:
        out.append((t, count_at(samples, t + 1) - count_at(samples, t)))
        t += 1
    return out


DROPPED = re.compile(r"^(\S+)\s+INFO\b.*expired partition dropped.*partition=(\S+).*elapsed_ms=(\d+)(?:.*span_ms=(\d+))?")


def drops_in_log(path):
    """(end time, partition, statements' ms, span ms) of each partition drop
    the hub logged: the span runs from the start of the retention's drop
    step (its listing and keep checks) to the end of the drop, pauses
    included; statements' ms are the detaches' and the drop's alone."""
    out = []
    for line in open(path, errors="replace"):
        m = DROPPED.search(line)
        if m:
            end = datetime.datetime.fromisoformat(m.group(1).replace("Z", "+00:00")).timestamp()
            out.append((end, m.group(2), int(m.group(3)), int(m.group(4) or m.group(3))))
    return out


FINISHED = re.compile(r"^(\S+)\s+INFO\b.*retention run finished")


def runs_in_log(path):
    """The end time of each retention run the hub logged."""
    return [datetime.datetime.fromisoformat(m.group(1).replace("Z", "+00:00")).timestamp()
            for m in map(FINISHED.search, open(path, errors="replace")) if m]


def summarize(samples, drops, day, warmup_end, run_ends=()):
    """The drop of `day`'s partition and S1's rate around it: over the
    retention run from its drop step to its end (the rate during it; the
    drop's span alone when no end was logged), and in every second that
    touches."""
    target = [d for d in drops if d[1] == day_partition("messages", day)]
    seconds = [s for s in per_second(samples) if s[0] >= warmup_end]
    res = {"drops": [{"partition": p, "ms": ms} for _, p, ms, _ in drops], "per_second": [round(n) for _, n in seconds]}
    if not target or len(seconds) < 5:
        return res
    dropped, _, ms, span = target[0]
    start = dropped - span / 1000
    end = min((e for e in run_ends if e >= dropped), default=dropped)
    during = [round(n) for t, n in seconds if t < end and t + 1 > start]
    median = round(statistics.median(n for _, n in seconds))
    width = max(end - start, 1e-3)
    rate = (count_at(samples, end) - count_at(samples, start)) / width
    # The noise to read the dips against: the slowest second, and the
    # slowest window as long as the run (in quarter-second steps), at
    # least one second away from it, past the first three seconds of
    # a freshly started hub and before the last (cut short when the load
    # stops).
    away = [round(n) for t, n in seconds[3:-1] if t + 1 < start - 1 or t > end + 1]
    lo, hi = seconds[3][0], seconds[-1][0]
    windows = [lo + k / 4 for k in range(int((hi - width - lo) * 4) + 1)]
    away_rates = [(count_at(samples, w + width) - count_at(samples, w)) / width for w in windows
                  if w + width < start - 1 or w > end + 1]
    res.update(drop_ms=ms, span_ms=span, run_ms=round(width * 1000), median_per_s=median, during_per_s=during,
               run_per_s=round(rate),
               dip=(1 - rate / median) if median else None,
               quiet_min_per_s=min(away) if away else None,
               quiet_run_per_s=round(min(away_rates)) if away_rates else None)
    return res
