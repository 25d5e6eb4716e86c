import { toRows, graphemes, displayWidth } from "../src/cli/interactive/internal/text.ts"
console.log(toRows("\x1b[31mhello 漢字漢字漢字 world e\u0301e\u0301\x1b[0m", 8))
console.log(graphemes("e\u0301a👍🏽"), displayWidth("漢e\u0301👍🏽"))
