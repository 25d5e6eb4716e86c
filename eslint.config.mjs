// The configuration lives in the tools/lint workspace (see there why).
export { default } from "./tools/lint/eslint.config.mjs"
