import { Schema } from "effect"
console.log(JSON.stringify(Schema.toJsonSchemaDocument(Schema.Struct({ n: Schema.Number.annotate({ description: "a number" }), f: Schema.Finite.annotate({ description: "finite" }), i: Schema.Int.annotate({ description: "int" }) })), null, 1))
