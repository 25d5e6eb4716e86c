import { Schema } from "effect"
import * as Tool from "../src/Tool.ts"
const T = Tool.make("t", { description: "", parameters: Schema.Struct({ n: Schema.Number.annotate({ description: "a number" }), f: Schema.Finite, o: Schema.optionalKey(Schema.Number), arr: Schema.Array(Schema.Number) }) })
console.log(JSON.stringify(T.jsonSchema, null, 1))
