// package.json's prepublishOnly: `npm publish` from a clone would publish the
// main package without its platform packages (the release pipeline publishes
// both, .github/workflows/release.yml). Refused unless LOOPX_PUBLISH=1 says it
// is meant.
if (process.env.LOOPX_PUBLISH !== '1') {
  console.error(
    'publish-guard: refusing to publish loopx-hooks from a checkout. To install it elsewhere, run\n' +
      '`npm run pack:local` and install the tarballs it leaves in pack/ (see CONTRIBUTING.md).\n' +
      'To publish anyway, set LOOPX_PUBLISH=1.',
  )
  process.exit(1)
}
