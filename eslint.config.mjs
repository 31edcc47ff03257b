// One linter for the TypeScript and JavaScript sources, type-aware so that a
// promise nobody awaits (an un-awaited `decide()`) is a finding, not a bug.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import globals from 'globals'

export default tseslint.config(
  {
    ignores: [
      'index.js',
      'index.d.ts',
      'bindings/**',
      'dist/**',
      'target/**',
      'node_modules/**',
      '.bench/**',
      'bench/probe/**',
      'dts-header.d.ts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: { project: './tsconfig.eslint.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Tests and the benchmark feed the API hostile and untyped values on purpose.
    files: ['__test__/**', 'bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
)
