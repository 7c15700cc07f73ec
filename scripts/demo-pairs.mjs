#!/usr/bin/env node
// Prints the (school, form) pairs the seeded FC database holds, one "SCHOOL FORM" line each: the
// nightly reconciliation runs once per pair.
import mysql from 'mysql2/promise';

const conn = await mysql.createConnection(process.env.FCCTL_FC_DATABASE_URL);
const [rows] = await conn.query('SELECT DISTINCT sch_id, form_uuid FROM answer ORDER BY sch_id, form_uuid');
for (const r of rows) console.log(`${r.sch_id} ${r.form_uuid}`);
await conn.end();
