-- fcctl reference schema, FC (form-center) side. Derived from seed 000 §1–§7 and SPEC §1.
-- Written for MariaDB 10.6+ and MySQL 8: plain types only, IF NOT EXISTS everywhere.
-- JSON documents are LONGTEXT, not JSON: MySQL 8's JSON type re-serializes numbers and would
-- change the bytes that content hashes are computed over.
-- Statements are separated by lines holding only ';' so that the loader needs no SQL parser.

CREATE TABLE IF NOT EXISTS fcctl_schema_version (
  side        VARCHAR(8)   NOT NULL PRIMARY KEY,
  version     INT          NOT NULL,
  is_dev      TINYINT(1)   NOT NULL DEFAULT 0,
  applied_at  DATETIME     NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
;
CREATE TABLE IF NOT EXISTS application_info (
  id        BIGINT       NOT NULL PRIMARY KEY,
  app_code  VARCHAR(64)  NOT NULL,
  app_key   VARCHAR(64)  NOT NULL,
  app_name  VARCHAR(128) NULL,
  status    TINYINT      NOT NULL DEFAULT 1,
  UNIQUE KEY uk_app_code (app_code),
  UNIQUE KEY uk_app_key (app_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
;
CREATE TABLE IF NOT EXISTS form_consumer_grant (
  id                 BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  form_uuid          CHAR(36)     NOT NULL,
  consumer_school_id BIGINT       NOT NULL,
  consumer_app_key   VARCHAR(64)  NOT NULL,
  grant_version      BIGINT       NOT NULL DEFAULT 1,
  read_allowed       TINYINT(1)   NOT NULL DEFAULT 1,
  subscribe_allowed  TINYINT(1)   NOT NULL DEFAULT 1,
  push_allowed       TINYINT(1)   NOT NULL DEFAULT 1,
  revoked            TINYINT(1)   NOT NULL DEFAULT 0,
  create_time        DATETIME     NOT NULL,
  update_time        DATETIME     NULL,
  UNIQUE KEY uk_grant (form_uuid, consumer_school_id, consumer_app_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
;
CREATE TABLE IF NOT EXISTS answer (
  id              BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  answer_uuid     CHAR(36)     NOT NULL,
  form_uuid       CHAR(36)     NOT NULL,
  form_version    INT          NOT NULL,
  sch_id          BIGINT       NOT NULL,
  app_code        VARCHAR(64)  NOT NULL,
  code            VARCHAR(128) NOT NULL,
  submitter_id    BIGINT       NOT NULL,
  subject_id      BIGINT       NULL,
  status          VARCHAR(32)  NOT NULL,
  values_json     LONGTEXT     NOT NULL,
  answer_no       VARCHAR(64)  NULL,
  create_time     DATETIME     NOT NULL,
  update_time     DATETIME     NULL,
  is_deleted      TINYINT(1)   NOT NULL DEFAULT 0,
  answer_revision BIGINT       NOT NULL DEFAULT 0,
  UNIQUE KEY uk_answer_uuid (answer_uuid),
  KEY idx_answer_manifest (sch_id, form_uuid, answer_uuid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
;
CREATE TABLE IF NOT EXISTS answer_delivery (
  id                  BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  event_id            VARCHAR(36)  NOT NULL,
  event_type          VARCHAR(16)  NOT NULL,
  source_app_key      VARCHAR(64)  NOT NULL,
  consumer_app_key    VARCHAR(64)  NOT NULL,
  consumer_school_id  BIGINT       NOT NULL,
  grant_version       BIGINT       NOT NULL,
  form_uuid           CHAR(36)     NOT NULL,
  form_version        INT          NOT NULL,
  answer_uuid         CHAR(36)     NOT NULL,
  answer_revision     BIGINT       NOT NULL,
  is_deleted          TINYINT(1)   NOT NULL DEFAULT 0,
  content_hash        CHAR(64)     NOT NULL,
  occurred_at         DATETIME     NOT NULL,
  snapshot_json       LONGTEXT     NOT NULL,
  state               VARCHAR(16)  NOT NULL DEFAULT 'PENDING',
  retry_count         INT          NOT NULL DEFAULT 0,
  next_retry_at       DATETIME     NULL,
  last_error          VARCHAR(512) NULL,
  broker_accepted_at  DATETIME     NULL,
  consumer_applied_at DATETIME     NULL,
  consumer_outcome    VARCHAR(32)  NULL,
  replay_op_digest    CHAR(64)     NULL,
  claim_owner         VARCHAR(128) NULL,
  claim_expires_at    DATETIME     NULL,
  create_time         DATETIME     NOT NULL,
  update_time         DATETIME     NULL,
  UNIQUE KEY uk_delivery_event (event_id),
  UNIQUE KEY uk_delivery_revision (answer_uuid, answer_revision, consumer_app_key, consumer_school_id),
  KEY idx_delivery_due (state, next_retry_at),
  KEY idx_delivery_consumer (consumer_app_key, consumer_school_id, state),
  -- fcctl's own (schema version 5, `db init` adds it to an existing table): `deliveries scan`'s
  -- reasons and newest FAILED/DEAD rows read it alone, never the history (test/db/explain.test.ts).
  -- One index, not one per statement: every send outcome (a state change) writes each index on state
  KEY idx_delivery_state_error (state, last_error, update_time, create_time),
  -- fcctl's own (schema version 7, added like the one above): `fcctl status`'s rows accepted in the
  -- last 5 minutes and hour, a range of the newest entries; without it that count read every
  -- accepted row of the history (issue 29 §2: 2,000,000 rows, 0.6 s of the 1 s goal)
  KEY idx_delivery_state_time (state, update_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
;
-- fcctl's record of replay operations (`deliveries replay --execute`): one row per operation id
-- digest, inserted first in the replay's transaction (the idempotency lock) and holding the first
-- answer, which the same operation id gets again without any write.
CREATE TABLE IF NOT EXISTS fcctl_replay_operation (
  op_digest          CHAR(64)     NOT NULL PRIMARY KEY,
  answer_uuid        CHAR(36)     NOT NULL,
  consumer_app_key   VARCHAR(64)  NOT NULL,
  consumer_school_id BIGINT       NOT NULL,
  expected_revision  BIGINT       NOT NULL,
  code               VARCHAR(32)  NOT NULL,
  reason             VARCHAR(512) NOT NULL,
  delivery_id        BIGINT       NULL,
  create_time        DATETIME     NOT NULL
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
