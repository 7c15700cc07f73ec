/**
 * Realistic `values_json` documents for `dev seed`, written as JSON text by hand: decimals keep
 * their trailing zeros (`12.50`, `100.0`) and big integers all their digits, as a real producer
 * stores them — a JS number would turn `12.50` into `12.5` and round `9007199254740993`.
 * Members are deliberately not in canonical order, so canonicalization has work to do.
 */
import type { Rng } from './random.js';

/** Raw JSON text of one value. */
type Json = string;

const str = (s: string): Json => JSON.stringify(s);
const arr = (items: readonly Json[], sep: string): Json => `[${items.join(sep)}]`;
function obj(members: ReadonlyArray<readonly [string, Json]>, sep: string, colon: string): Json {
  return `{${members.map(([k, v]) => `${str(k)}${colon}${v}`).join(sep)}}`;
}

const SURNAMES = ['张', '王', '李', '赵', '刘', '陈', '杨', '黄', '周', '吴', '欧阳'];
const GIVEN = [
  '伟',
  '芳',
  '娜',
  '敏',
  '静',
  '丽',
  '强',
  '磊',
  '洋',
  '艳',
  '勇',
  '军',
  '杰',
  '娟',
  '涛',
  '明轩',
  '子涵',
];
const COURSES = ['语文', '数学', '英语', '物理', '化学', '生物', '历史', '地理'];
const TAGS = ['三好学生', '班干部', '优秀团员', '志愿者', '竞赛获奖', 'student "leader"'];
const REASONS = [
  '本学期积极参加各项活动，成绩优良。',
  '因家中有事需请假，望批准。\n返校后补交作业。',
  '申请理由：家庭经济困难，申请资助。',
  'Participated in the regional maths olympiad; 获得二等奖。',
  '路径 C:\\data\\证明\\scan.pdf 已上传',
];

/** A decimal literal with two fraction digits, often ending in 0 (`12.50`). */
function money(rng: Rng, max: number): Json {
  return `${rng.int(0, max)}.${rng.int(0, 9)}${rng.chance(0.6) ? '0' : rng.int(0, 9)}`;
}

/** A score as a producer writes it: `95.5`, `88.0`, or `100.0`. */
function score(rng: Rng): Json {
  return rng.chance(0.1) ? '100.0' : `${rng.int(55, 99)}.${rng.pick(['0', '5'])}`;
}

/** An integer beyond 2^53, where a JS number would lose digits. */
function bigId(rng: Rng): Json {
  return (9007199254740993n + BigInt(rng.int(0, 1_000_000)) * 2n).toString();
}

/**
 * One answer's values document for a form of the given code.
 * @example valuesJson(new Rng(1, 'v', 0), 'honor_apply', 0) // '{"applicant":{"name":"张伟",…},"amount":12.50,…}'
 */
export function valuesJson(rng: Rng, formCode: string, index: number): string {
  // Most producers write compact JSON; some leave spaces. Both canonicalize to the same text.
  const spaced = rng.chance(0.2);
  const sep = spaced ? ', ' : ',';
  const colon = spaced ? ': ' : ':';
  const o = (members: ReadonlyArray<readonly [string, Json]>) => obj(members, sep, colon);
  const name = rng.pick(SURNAMES) + rng.pick(GIVEN);
  const applicant = o([
    ['name', str(name)],
    ['studentNo', str(`2024${String(index % 100000).padStart(5, '0')}`)],
    ['className', str(`高${rng.pick(['一', '二', '三'])}(${rng.int(1, 12)})班`)],
    ['age', String(rng.int(14, 19))],
  ]);
  const courses = Array.from({ length: rng.int(1, 4) }, () =>
    o([
      ['course', str(rng.pick(COURSES))],
      ['score', score(rng)],
      ['credit', rng.pick(['4.0', '3.5', '2'])],
    ]),
  );
  const tags = Array.from({ length: rng.int(0, 3) }, () => str(rng.pick(TAGS)));
  const attachments = rng.chance(0.5)
    ? [
        o([
          ['id', String(rng.int(1000, 99999))],
          ['fileName', str(`证明材料-${index}.pdf`)],
          ['key', str(`fc/2026/10/${index}/${rng.int(100000, 999999)}.pdf`)],
        ]),
      ]
    : [];
  const members: Array<readonly [string, Json]> = [
    ['applicant', applicant],
    ['reason', str(rng.pick(REASONS))],
    ['formCode', str(formCode)],
    ['amount', money(rng, 5000)],
    ['gpa', `${rng.int(2, 4)}.${rng.int(0, 9)}0`],
    ['scores', arr(courses, sep)],
    ['refIds', arr([bigId(rng), String(rng.int(1, 9999))], sep)],
    ['agree', rng.chance(0.9) ? 'true' : 'false'],
    ['remark', rng.chance(0.5) ? 'null' : str('无')],
    ['tags', arr(tags, sep)],
    ['attachments', arr(attachments, sep)],
    ['days', String(rng.int(0, 30))],
  ];
  return o(members);
}

/**
 * `values` with an ASCII `notes` member of exactly `fill` characters appended, to grow a snapshot
 * to a given size: ASCII without quotes or backslashes adds exactly its length in canonical bytes.
 */
export function padValues(values: string, fill: number): string {
  const unit = 'lorem ipsum dolor sit amet ';
  const text = unit.repeat(Math.ceil(fill / unit.length)).slice(0, fill);
  const close = values.lastIndexOf('}');
  const empty = /^\{\s*$/.test(values.slice(0, close));
  return `${values.slice(0, close)}${empty ? '' : ','}"notes":${str(text)}}`;
}

/** Canonical bytes a `notes` member adds beyond its text: `,"notes":""`. */
export const PAD_OVERHEAD = Buffer.byteLength(',"notes":""');
