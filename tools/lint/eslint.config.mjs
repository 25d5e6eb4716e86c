// ESLint as Effect's repositories use it: the recommended JavaScript and typescript-eslint rules, Effect's
// choices among them, and @effect/eslint-plugin's dprint rule (the same settings as dprint.json, so
// `eslint --fix` also formats). Loaded by the root eslint.config.mjs; it lives in this workspace because
// typescript-eslint needs a TypeScript with the classic compiler API (5.x) and the project builds with 7.
import "./typescript5.mjs"
const { default: js } = await import("@eslint/js")
const { default: tseslint } = await import("typescript-eslint")
const effectEslint = await import("@effect/eslint-plugin")

export default tseslint.config(
  {
    ignores: ["**/node_modules/**", "**/dist/**", "scratchpad/out/**", "test/tools/fixtures/**/*.js"]
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...effectEslint.configs.dprint,
  {
    files: ["**/*.{ts,mts,cts,js,mjs,cjs}"],
    languageOptions: {
      parser: tseslint.parser,
      ecmaVersion: 2023,
      sourceType: "module",
      globals: {
        console: "readonly",
        process: "readonly",
        globalThis: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly",
        setInterval: "readonly",
        clearInterval: "readonly",
        setImmediate: "readonly",
        URL: "readonly",
        AbortController: "readonly",
        AbortSignal: "readonly",
        TextEncoder: "readonly",
        TextDecoder: "readonly",
        Buffer: "readonly",
        structuredClone: "readonly",
        fetch: "readonly",
        Response: "readonly",
        Request: "readonly",
        Headers: "readonly",
        performance: "readonly",
        queueMicrotask: "readonly"
      }
    },
    rules: {
      "no-fallthrough": "off",
      "no-irregular-whitespace": "off",
      "object-shorthand": "error",
      "prefer-destructuring": "off",
      "sort-imports": "off",
      "no-unused-vars": "off",
      "prefer-rest-params": "off",
      "prefer-spread": "off",
      "@typescript-eslint/array-type": ["warn", { default: "generic", readonly: "generic" }],
      "@typescript-eslint/no-non-null-assertion": "off",
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-empty-object-type": "off",
      "@typescript-eslint/consistent-type-imports": "warn",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/ban-ts-comment": "off",
      "@typescript-eslint/no-namespace": "off",
      "@typescript-eslint/no-unsafe-function-type": "off",
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }]
    }
  },
  {
    // The library imports effect module by module: the barrels ("effect", "effect/http", ...) load every
    // module of their area at start-up (~190 ms for "effect" alone), a module path loads only what is used.
    files: ["src/**/*.ts"],
    rules: {
      "@effect/no-import-from-barrel-package": ["error", {
        packageNames: [
          "effect",
          ...["ai", "cli", "cluster", "encoding", "http", "process", "reactivity", "rpc", "sql", "workflow"].map((
            area
          ) => `effect/${area}`)
        ]
      }]
    }
  },
  {
    // The core's per-run and per-call paths make no generator function inside a function: a generator
    // function made per call gets a hidden class of its own in the old generation that holds its scope, so
    // every scavenge until the next major collection keeps (and promotes) what that call held. Module-level
    // `Effect.fnUntraced(function*...)` is the form to use (see `runMasked` in src/AgentLoop.ts).
    files: ["src/AgentLoop.ts", "src/ToolExecution.ts", "src/internal/*.ts", "src/providers/internal/transport.ts"],
    rules: {
      "no-restricted-syntax": ["error", {
        selector: ":function FunctionExpression[generator=true]",
        message: "A generator function made per call keeps its scope alive until a major collection: " +
          "use a module-level Effect.fnUntraced(function*...) instead."
      }]
    }
  },
  {
    // Terminal escapes are what these files test and draw: control characters in their patterns are the point.
    files: ["test/**/*.ts", "scratchpad/**/*.{ts,mjs}"],
    rules: { "no-control-regex": "off" }
  }
)
