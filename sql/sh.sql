-- fcctl reference schema, SH (svc-hall) side. Derived from seed 000 §5, §7.3, §8.1 and SPEC §1.
-- Written for MariaDB 10.6+ and MySQL 8. Statements are separated by lines holding only ';'.

CREATE TABLE IF NOT EXISTS fcctl_schema_version (
  side        VARCHAR(8)   NOT NULL PRIMARY KEY,
  version     INT          NOT NULL,
  is_dev      TINYINT(1)   NOT NULL DEFAULT 0,
  applied_at  DATETIME     NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
;
CREATE TABLE IF NOT EXISTS fc_answer_projection (
  id                   BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  answer_uuid          CHAR(36)     NOT NULL,
  sch_id               BIGINT       NOT NULL,
  form_uuid            CHAR(36)     NOT NULL,
  form_version         INT          NOT NULL,
  answer_revision      BIGINT       NOT NULL,
  content_hash         CHAR(64)     NOT NULL,
  is_deleted           TINYINT(1)   NOT NULL DEFAULT 0,
  snapshot_json        LONGTEXT     NOT NULL,
  link_state           VARCHAR(16)  NOT NULL DEFAULT 'UNLINKED',
  intent_id            VARCHAR(64)  NULL,
  apply_id             BIGINT       NULL,
  flow_guid            VARCHAR(64)  NULL,
  biz_ext_json         LONGTEXT     NULL,
  conflict_flag        TINYINT(1)   NOT NULL DEFAULT 0,
  projection_version   BIGINT       NOT NULL DEFAULT 0,
  create_time          DATETIME     NULL,
  update_time          DATETIME     NULL,
  retired_at           DATETIME     NULL,
  retire_proof_id      VARCHAR(128) NULL,
  last_repair_proof_id VARCHAR(128) NULL,
  last_repaired_at     DATETIME     NULL,
  UNIQUE KEY uk_projection_answer (answer_uuid, sch_id),
  UNIQUE KEY uk_projection_intent (intent_id),
  KEY idx_projection_manifest (sch_id, form_uuid, answer_uuid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
;
CREATE TABLE IF NOT EXISTS service_apply (
  id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  biz_type    VARCHAR(32)  NOT NULL,
  biz_id      VARCHAR(64)  NOT NULL,
  flow_status INT          NULL,
  update_time DATETIME     NULL,
  UNIQUE KEY uk_service_apply_biz (biz_type, biz_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
;
CREATE TABLE IF NOT EXISTS flow_apply_command (
  id                 BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  biz_type           VARCHAR(32)  NOT NULL,
  biz_id             VARCHAR(64)  NOT NULL,
  apply_app_key      VARCHAR(64)  NOT NULL,
  submitter_id       BIGINT       NOT NULL,
  flow_guid          VARCHAR(64)  NOT NULL,
  request_token      VARCHAR(64)  NOT NULL,
  attempt            INT          NOT NULL DEFAULT 1,
  state              VARCHAR(16)  NOT NULL DEFAULT 'PENDING',
  retry_count        INT          NOT NULL DEFAULT 0,
  next_retry_at      DATETIME     NULL,
  remote_status      INT          NULL,
  remote_instance_id VARCHAR(64)  NULL,
  last_branch        VARCHAR(32)  NULL,
  last_error         VARCHAR(512) NULL,
  claim_owner        VARCHAR(128) NULL,
  claim_expires_at   DATETIME     NULL,
  create_time        DATETIME     NOT NULL,
  update_time        DATETIME     NULL,
  UNIQUE KEY uk_apply_command_biz (biz_type, biz_id),
  KEY idx_apply_command_due (state, next_retry_at),
  -- fcctl's own (schema version 5, `db init` adds it to an existing table): `apply-command scan`'s
  -- reasons and newest DEAD rows read it alone, never the DONE history (test/db/explain.test.ts)
  KEY idx_apply_command_state_error (state, last_error, last_branch, update_time, create_time),
  -- fcctl's own (schema version 7, added like the one above): `fcctl status`'s commands DONE in the
  -- last 5 minutes and hour, a range of the newest entries, never the DONE history
  KEY idx_apply_command_state_time (state, update_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
;
CREATE TABLE IF NOT EXISTS fc_reconcile_audit (
  id            BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  action        VARCHAR(32)  NOT NULL,
  outcome       VARCHAR(32)  NOT NULL,
  reason        VARCHAR(255) NULL,
  proof_id      VARCHAR(128) NULL,
  run_id        VARCHAR(64)  NOT NULL,
  host          VARCHAR(255) NOT NULL,
  sch_id        BIGINT       NULL,
  answer_uuid   CHAR(36)     NULL,
  expected_json TEXT         NULL,
  observed_json TEXT         NULL,
  create_time   DATETIME     NOT NULL,
  KEY idx_audit_answer (answer_uuid, sch_id),
  KEY idx_audit_run (run_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
;
-- One row per command an `apply-command requeue` operation answered (SPEC §9, issue 17): the
-- operation id's digest with the business key is the idempotency key, as fcctl_replay_operation is
-- on the FC side. Inserted first in the requeue's transaction, so it is also the lock.
-- Plus one header row per operation (biz_type = biz_id = '', never a key: key parts are never
-- empty), inserted in its own transaction before any command is touched: the unique key binds the
-- operation id to one selection; completed_at is set once every command has a final answer.
CREATE TABLE IF NOT EXISTS fcctl_requeue_operation (
  id              BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  op_digest       CHAR(64)     NOT NULL,
  biz_type        VARCHAR(32)  NOT NULL,
  biz_id          VARCHAR(64)  NOT NULL,
  selector        VARCHAR(255) NOT NULL,
  selector_sha256 CHAR(64)     NOT NULL,
  code            VARCHAR(32)  NOT NULL,
  reason          VARCHAR(512) NOT NULL,
  command_id      BIGINT       NULL,
  create_time     DATETIME     NOT NULL,
  completed_at    DATETIME     NULL,
  UNIQUE KEY uk_requeue_op_command (op_digest, biz_type, biz_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
;
-- The fleet's pause switch (issue 19 §3): one row per paused command that writes this database,
-- set by `fcctl pause COMMAND`, removed by `fcctl resume COMMAND`; the command reads it at start and
-- before each batch or page and stops cleanly. Times are UTC (UTC_TIMESTAMP()); a row whose
-- until_at has passed counts as not paused.
CREATE TABLE IF NOT EXISTS fcctl_pause (
  command   VARCHAR(64)  NOT NULL PRIMARY KEY,
  reason    VARCHAR(512) NOT NULL,
  paused_by VARCHAR(255) NOT NULL,
  paused_at DATETIME     NOT NULL,
  until_at  DATETIME     NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
;
-- Every pause and resume of the switch: what, why, by whom (user@host), from which host, when (UTC).
CREATE TABLE IF NOT EXISTS fcctl_pause_event (
  id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  command     VARCHAR(64)  NOT NULL,
  action      VARCHAR(16)  NOT NULL,
  reason      VARCHAR(512) NULL,
  until_at    DATETIME     NULL,
  actor       VARCHAR(255) NOT NULL,
  host        VARCHAR(255) NOT NULL,
  create_time DATETIME     NOT NULL,
  KEY idx_pause_event_command (command, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
;
-- The pairs of one `reconcile run --all` run (issue 19 §1): one row per (run id, school, form), found
-- on either side and registered by every process of the run (INSERT IGNORE). A process claims a
-- pair with a lease (claim_owner, claim_generation, claim_expires_at, UTC from the database's clock),
-- renews it while the pair runs, and records DONE or FAILED with the pair's result; a pair whose lease
-- expired (its process was killed) is claimed again by another process of the same run. Claims read
-- along uk_reconcile_task_pair in pair order (FOR UPDATE SKIP LOCKED) and write by id;
-- idx_reconcile_task_open finds the recent runs a process without --run-id may join.
CREATE TABLE IF NOT EXISTS fcctl_reconcile_task (
  id               BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  run_id           VARCHAR(64)  NOT NULL,
  sch_id           BIGINT       NOT NULL,
  form_uuid        CHAR(36)     NOT NULL,
  state            VARCHAR(16)  NOT NULL DEFAULT 'PENDING',
  claim_owner      VARCHAR(128) NULL,
  claim_generation BIGINT       NOT NULL DEFAULT 0,
  claim_expires_at DATETIME     NULL,
  attempts         INT          NOT NULL DEFAULT 0,
  host             VARCHAR(255) NULL,
  result_json      LONGTEXT     NULL,
  create_time      DATETIME     NOT NULL,
  finished_at      DATETIME     NULL,
  UNIQUE KEY uk_reconcile_task_pair (run_id, sch_id, form_uuid),
  KEY idx_reconcile_task_open (state, create_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
;
-- When a process without --run-id last chose each default-named run of `reconcile run --all` (began
-- or joined it; schema version 6, issue 26 §3): a join is activity too, so the processes of one night
-- agree on one run even when the first joined a run that had just finished.
CREATE TABLE IF NOT EXISTS fcctl_reconcile_join (
  run_id    VARCHAR(64) NOT NULL PRIMARY KEY,
  joined_at DATETIME    NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
;
-- The fleet registry (schema version 6, issue 27): one row per `--follow` service process, beaten
-- every `heartbeat_seconds` by the process itself on the database it writes, removed on a clean
-- stop. A row whose `last_beat_at` is older than three of its own intervals is stale (the process
-- was killed or cut off). Times are the database's UTC clock, so hosts in any zone agree. `detail`
-- (schema version 8, issue 36 §10): why a service in outage or misconfigured is so, as it says it
-- (its target and error), control characters escaped; null in any other state.
CREATE TABLE IF NOT EXISTS fcctl_worker (
  worker_id         VARCHAR(64)   NOT NULL PRIMARY KEY,
  command           VARCHAR(64)   NOT NULL,
  host              VARCHAR(255)  NOT NULL,
  pid               INT           NOT NULL,
  version           VARCHAR(32)   NOT NULL,
  started_at        DATETIME      NOT NULL,
  last_beat_at      DATETIME      NOT NULL,
  heartbeat_seconds INT           NOT NULL,
  state             VARCHAR(16)   NOT NULL,
  rows_per_second   DECIMAL(12,2) NOT NULL DEFAULT 0,
  detail            VARCHAR(255)  NULL,
  KEY idx_worker_command (command, last_beat_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
;
-- The drift ledger (schema version 7, issue 30 §2): one row per pair per night of `reconcile run
-- --all` (a night = one run id), written in the same transaction as the pair's guarded DONE or FAILED
-- in fcctl_reconcile_task, so a ledger row exists only for a finished pair; a pair finished again in
-- the same run (a FAILED pair retried) updates its row. run_started_at is the night's start (UTC:
-- MIN(create_time) of the run's tasks), the same on every row of a run. One column per category of
-- the diff; `reconcile history` and the report read it by night (idx_reconcile_ledger_night: the
-- newest nights, then each night's pairs by uk_reconcile_ledger_pair) or by pair; `--keep-nights`
-- prunes whole nights.
CREATE TABLE IF NOT EXISTS fcctl_reconcile_ledger (
  id                              BIGINT        NOT NULL AUTO_INCREMENT PRIMARY KEY,
  run_id                          VARCHAR(64)   NOT NULL,
  run_started_at                  DATETIME      NOT NULL,
  sch_id                          BIGINT        NOT NULL,
  form_uuid                       CHAR(36)      NOT NULL,
  result                          VARCHAR(16)   NOT NULL,
  in_sync                         BIGINT        NOT NULL DEFAULT 0,
  missing_local                   BIGINT        NOT NULL DEFAULT 0,
  stale_local                     BIGINT        NOT NULL DEFAULT 0,
  hash_conflict                   BIGINT        NOT NULL DEFAULT 0,
  local_ahead                     BIGINT        NOT NULL DEFAULT 0,
  retired_present_at_fc           BIGINT        NOT NULL DEFAULT 0,
  absent_at_fc                    BIGINT        NOT NULL DEFAULT 0,
  absent_created_after_task_start BIGINT        NOT NULL DEFAULT 0,
  absent_create_time_null         BIGINT        NOT NULL DEFAULT 0,
  retired                         BIGINT        NOT NULL DEFAULT 0,
  differences                     BIGINT        NOT NULL DEFAULT 0,
  fc_rows                         BIGINT        NULL,
  sh_rows                         BIGINT        NULL,
  error                           VARCHAR(1024) NULL,
  seconds                         DOUBLE        NOT NULL DEFAULT 0,
  throttled_seconds               DOUBLE        NOT NULL DEFAULT 0,
  host                            VARCHAR(255)  NULL,
  finished_at                     DATETIME      NOT NULL,
  UNIQUE KEY uk_reconcile_ledger_pair (run_id, sch_id, form_uuid),
  KEY idx_reconcile_ledger_pair (sch_id, form_uuid, run_started_at),
  KEY idx_reconcile_ledger_night (run_started_at, run_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
;
