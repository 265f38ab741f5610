// The `versions` sample plugin, in JavaScript: semantic versions through the
// `semver` npm package (the one npm itself uses).
import semver from 'semver';
import { defineTool, plugin, InvalidArguments, log, progress } from 'corral-tool';

function parse(field, text) {
  const v = semver.parse(text, { loose: true });
  if (!v) throw new InvalidArguments(`${field} '${text}' is not a semantic version (expected MAJOR.MINOR.PATCH, e.g. 1.4.2)`);
  return v;
}

function range(text) {
  const r = semver.validRange(text, { loose: true });
  if (r === null) throw new InvalidArguments(`range '${text}' is not a valid semver range (e.g. ^1.2.0, >=2 <3, 1.x)`);
  return r;
}

const compare = defineTool({
  name: 'semver_compare',
  description: 'Compare two semantic versions (SemVer 2.0.0 precedence, pre-releases sort before their release). Returns order -1, 0 or 1 and which is newer.',
  parameters: {
    a: { type: 'string', description: 'First version, e.g. "1.2.3" or "2.0.0-rc.1".' },
    b: { type: 'string', description: 'Second version.' },
  },
  category: 'versions',
  keywords: ['semver', 'compare', 'version'],
  idempotent: true,
}, ({ a, b }) => {
  const va = parse('a', a);
  const vb = parse('b', b);
  const order = semver.compare(va, vb);
  return { order, newer: order === 0 ? null : (order > 0 ? va.version : vb.version), diff: semver.diff(va, vb) };
});

const satisfies = defineTool({
  name: 'semver_satisfies',
  description: 'Check which versions satisfy a range (npm range syntax: ^1.2.0, ~1.2, >=2 <3, 1.x, ||). Returns the matching versions and the highest one.',
  parameters: {
    range: { type: 'string', description: 'The range, e.g. "^1.2.0".' },
    versions: { type: 'array', items: { type: 'string' }, minItems: 1, description: 'Candidate versions.' },
    include_prerelease: { type: 'boolean', default: false, description: 'Let pre-release versions match ranges without a pre-release tag.' },
  },
  category: 'versions',
  keywords: ['semver', 'range', 'dependency'],
  idempotent: true,
}, ({ range: text, versions, include_prerelease }) => {
  const r = range(text);
  const options = { includePrerelease: include_prerelease };
  const parsed = versions.map((v, i) => parse(`versions[${i}]`, v).version);
  const matching = parsed.filter((v) => semver.satisfies(v, r, options));
  if (parsed.length > 1000) progress(`checked ${parsed.length} versions`);
  return { range: r, matching, highest: semver.maxSatisfying(parsed, r, options) };
});

const bump = defineTool({
  name: 'semver_bump',
  description: 'Compute the next version for a kind of release (major, minor, patch, premajor, preminor, prepatch, prerelease).',
  parameters: {
    version: { type: 'string', description: 'The current version.' },
    release: { type: 'string', enum: ['major', 'minor', 'patch', 'premajor', 'preminor', 'prepatch', 'prerelease'], description: 'Kind of release.' },
    preid: { type: 'string', optional: true, description: 'Pre-release identifier for pre* releases, e.g. "beta".' },
  },
  category: 'versions',
  keywords: ['semver', 'release', 'bump'],
  idempotent: true,
}, ({ version, release, preid }) => {
  const v = parse('version', version);
  const next = semver.inc(v.version, release, preid);
  if (next === null) throw new InvalidArguments(`cannot apply a ${release} release to ${v.version}`);
  log.debug(`${release}: ${v.version} -> ${next}`);
  return { previous: v.version, next };
});

export const tool = plugin(compare, satisfies, bump);
