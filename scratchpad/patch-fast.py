# Copies src/ to scratchpad/bench-src/ and applies candidate hot-path changes behind env flags:
# FAST=emit,syncsink,ctx,release,result,clock,preflight  or FAST=all (minus "-flag").
import shutil, os
os.chdir('/work/main')
shutil.rmtree('scratchpad/bench-src', ignore_errors=True)
shutil.copytree('src', 'scratchpad/bench-src')
p = 'scratchpad/bench-src/ToolExecution.ts'
s = open(p).read()
def rep(old, new):
    global s
    assert s.count(old) == 1, (old[:100], s.count(old))
    s = s.replace(old, new)

rep('const DEFAULT_GRACE = Duration.seconds(2)', '''const DEFAULT_GRACE = Duration.seconds(2)
let FAST = new Set((process.env.FAST ?? "").split(","))
const on = (flag: string) => FAST.has(flag) || (FAST.has("all") && !FAST.has("-" + flag))
let F_EMIT = false, F_SYNCSINK = false, F_CTX = false, F_RELEASE = false, F_RESULT = false, F_CLOCK = false,
  F_PREFLIGHT = false, F_VALIDATE = false, F_EAGER = false, F_ASYNCSINK = false
/** Switches the experimental changes at run time (benchmark only). */
export const setFast = (spec: string): void => {
  FAST = new Set(spec.split(","))
  F_EMIT = on("emit")
  F_SYNCSINK = on("syncsink")
  F_CTX = on("ctx")
  F_RELEASE = on("release")
  F_RESULT = on("result")
  F_CLOCK = on("clock")
  F_PREFLIGHT = on("preflight")
  F_VALIDATE = on("validate")
  F_EAGER = on("eager")
  F_ASYNCSINK = FAST.has("asyncsink")
}
setFast(process.env.FAST ?? "")''')

# ---- emit: (a) sync sinks are called directly; (b) otherwise one uninterruptible (the callers already are), shared failure handler
rep('''  let closed = false
  const deliver = (event: AgentEvent) =>''', '''  let closed = false
  const emitUnsafe = (sink as { emitUnsafe?: (event: AgentEvent) => void }).emitUnsafe
  if (F_SYNCSINK && emitUnsafe !== undefined) {
    // A synchronous subscriber cannot be cut half-way by an abort: no Effect per event at all.
    const deliverNow = (event: AgentEvent): Effect.Effect<void> => {
      try {
        emitUnsafe(event)
        return Effect.void
      } catch (error) {
        return Effect.logWarning(`effect-agent: an event subscriber failed on ${event.type}`, error)
      }
    }
    return {
      emit: call,
      bounded: () => call,
      close: () => {
        closed = true
      }
    }
  }
  if (F_EMIT) {
    const onFailure = (cause: Cause.Cause<unknown>) =>
      Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.logWarning("effect-agent: an event subscriber failed", cause)
    const deliverFast = (event: AgentEvent): Effect.Effect<void> => {
      let effect: Effect.Effect<void>
      try {
        effect = sink.emit(event)
      } catch (error) {
        return Effect.logWarning(`effect-agent: an event subscriber failed on ${event.type}`, error)
      }
      return Effect.catchCause(effect, onFailure)
    }
    return {
      // emitStart / emitEnd / announce already run uninterruptibly; only `update` needs its own region.
      emit: (event) => closed ? Effect.void : deliverFast(event),
      bounded: (grace) => (event) => Effect.asVoid(Effect.timeoutOption(Effect.interruptible(deliverFast(event)), grace)),
      close: () => {
        closed = true
      }
    }
  }
  const deliver = (event: AgentEvent) =>''')

# ---- result: hand-written shape check, Schema only to explain failures
rep('''const isValidResult = Schema.is(ToolResultSchema)''', '''const isValidResult = Schema.is(ToolResultSchema)
/** Equivalent to `isValidResult` for plain results; anything unusual is decided by the Schema. */
const isToolResultShape = (value: unknown): boolean => {
  if (typeof value !== "object" || value === null) return false
  const v = value as { content?: unknown; terminate?: unknown }
  const content = v.content
  if (!Array.isArray(content)) return false
  for (let i = 0; i < content.length; i++) {
    const block = content[i] as { type?: unknown; text?: unknown; textSignature?: unknown; data?: unknown; mimeType?: unknown }
    if (typeof block !== "object" || block === null) return false
    if (block.type === "text") {
      if (typeof block.text !== "string") return false
      if ("textSignature" in block && typeof block.textSignature !== "string") return isValidResult(value)
    } else if (block.type === "image") {
      if (typeof block.data !== "string" || typeof block.mimeType !== "string") return false
    } else return false
  }
  if ("terminate" in v && typeof v.terminate !== "boolean") return isValidResult(value)
  return true
}''')
rep('''    if (isValidResult(value)) return { result: value, isError: false }''',
    '''    if (F_RESULT ? isToolResultShape(value) : isValidResult(value)) return { result: value as ToolResult, isError: false }''')

# ---- ctx: a class (accessor on the prototype) instead of a per-call object literal with a getter + closures
rep('''const execute = <R>(batch: Batch<R>, prepared: Prepared): Effect.Effect<Finalized> =>''', '''class ToolContextImpl implements ToolContext {
  controller: AbortController | undefined = undefined
  readonly toolCallId: string
  readonly batch: Batch<any>
  readonly call: Call
  constructor(batch: Batch<any>, call: Call) {
    this.toolCallId = call.toolCall.id
    this.batch = batch
    this.call = call
  }
  get signal(): AbortSignal {
    return (this.controller ??= new AbortController()).signal
  }
  // An own arrow, so that a tool may destructure `{ update }` from its context.
  readonly update = (partialResult: ToolResult<unknown>): Effect.Effect<void> =>
    Effect.suspend(() =>
      this.call.stage === "running"
        ? Effect.uninterruptible(this.batch.emit({
          type: "tool_execution_update",
          toolCallId: this.toolCallId,
          toolName: this.call.toolCall.name,
          args: this.call.toolCall.arguments,
          partialResult
        }))
        : Effect.void
    )
  abort(): void {
    this.controller?.abort(new Error(`Tool call ${this.toolCallId} was interrupted`))
  }
  stopped(): Effect.Effect<void> {
    return Effect.sync(() => {
      this.abort()
      this.call.stage = "stopped"
    })
  }
}

const execute = <R>(batch: Batch<R>, prepared: Prepared): Effect.Effect<Finalized> =>''')
rep('''    call.stage = "running"
    const toolCall = call.toolCall
    let controller''', '''    call.stage = "running"
    const toolCall = call.toolCall
    if (F_CTX) {
      const ctx = new ToolContextImpl(batch, call)
      call.abort = () => ctx.abort()
      const run = Effect.onInterrupt(Effect.suspend(() => entry.handler(prepared.args, ctx)), () => ctx.stopped())
      return forked(batch, call, entry, run, entry.tool.timeout ?? batch.timeout, () => ctx.abort())
    }
    let controller''')
rep('''// ---------------------------------------------------------------------------------------------------------
// Phase 3: finalize''', '''const forked = <R>(
  batch: Batch<R>,
  call: Call,
  entry: RegisteredTool,
  run: Effect.Effect<ToolResult, unknown>,
  timeout: Duration.Duration | undefined,
  abortSignal: () => void
): Effect.Effect<Finalized> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.forkDetach(restore(run), { startImmediately: true }), (fiber) => {
      const done = fiber.pollUnsafe()
      if (done !== undefined) return Effect.succeed(executedResult(entry.tool, done))
      const stop = stopTool(call, fiber, abortSignal, batch.grace)
      if (timeout === undefined) {
        return restore(Fiber.await(fiber)).pipe(
          Effect.onInterrupt(() => stop),
          Effect.map((exit) => executedResult(entry.tool, exit))
        )
      }
      return restore(Effect.timeoutOption(Fiber.await(fiber), timeout)).pipe(
        Effect.onInterrupt(() => stop),
        Effect.flatMap((exit) =>
          Option.isSome(exit)
            ? Effect.succeed(executedResult(entry.tool, exit.value))
            : Effect.map(stop, () =>
              errorResult(
                `Tool ${entry.tool.name} timed out after ${Duration.format(timeout)}${
                  call.abandoned ? " and was abandoned: it did not stop when cancelled" : ""
                }`,
                { timedOut: true, abandoned: call.abandoned }
              ))
        )
      )
    })
  )

// ---------------------------------------------------------------------------------------------------------
// Phase 3: finalize''')

# ---- release: a settled call drops its abort hook (which otherwise keeps execute()'s whole scope alive)
rep('''    call.outcome = finalized
    call.ended = true
    call.stage = "settled"''', '''    call.outcome = finalized
    call.ended = true
    call.stage = "settled"
    if (F_RELEASE) call.abort = undefined''')

# ---- clock: read the Clock service once per batch
rep('''const announce = <R>(batch: Batch<R>, call: Call): Effect.Effect<void> =>
  Effect.uninterruptible(Effect.flatMap(Clock.currentTimeMillis, (now) => {''', '''const announce = <R>(batch: Batch<R>, call: Call): Effect.Effect<void> =>
  F_CLOCK ? Effect.uninterruptible(Effect.suspend(() => {
    const message = createMessage(batch, call, batch.clock!.currentTimeMillisUnsafe())
    call.announced = true
    return Effect.andThen(
      batch.emit({ type: "message_start", message }),
      Effect.suspend(() => {
        call.messageEnded = true
        return batch.emit({ type: "message_end", message })
      })
    )
  })) :
  Effect.uninterruptible(Effect.flatMap(Clock.currentTimeMillis, (now) => {''')
rep('''  lastTimestamp: number
}''', '''  lastTimestamp: number
  clock?: Clock.Clock
}''')
rep('''      const sink = yield* EventSink.EventSink
''', '''      const sink = yield* EventSink.EventSink
      const clock = F_CLOCK ? yield* Clock.Clock : undefined
''')
rep('''        lastTimestamp: 0
      }''', '''        lastTimestamp: 0,
        ...(clock ? { clock } : {})
      }''')

# ---- preflight: Effect.forEach + matchEffect instead of a generator with Effect.result per call
rep('''    const prepared: Array<Prepared> = []
    for (const call of calls) {''', '''    const prepared: Array<Prepared> = []
    if (F_PREFLIGHT) {
      yield* Effect.forEach(calls, (call) =>
        Effect.andThen(
          emitStart(batch, call),
          Effect.matchEffect(Effect.suspend(() => prepare(batch, call)), {
            onFailure: (outcome) => emitEnd(batch, call, immediateResult(outcome)),
            onSuccess: (p) => {
              prepared.push(p)
              return Effect.void
            }
          })
        ), { discard: true })
    } else
    for (const call of calls) {''')
# ---- validate: a compiled fast path for flat Structs of primitives; the Schema decoder explains failures
rep('''const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()''', '''const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

const NOT_FAST: unique symbol = Symbol("NOT_FAST")
type FastValidate = (u: unknown) => unknown
const fastValidators = new WeakMap<Tool.Any, FastValidate | null>()
/**
 * For a Struct whose properties are plain String / Number / Boolean (optional keys allowed, no checks, no
 * transformations) decoding is "copy the declared keys if their types match": compiled once per tool.
 */
const compileFast = (ast: SchemaAST.AST): FastValidate | null => {
  if (ast._tag !== "Objects" || ast.checks !== undefined || ast.encoding !== undefined) return null
  if (ast.indexSignatures.length > 0) return null
  const props: Array<{ readonly name: string; readonly kind: string; readonly optional: boolean }> = []
  for (const p of ast.propertySignatures) {
    const t = p.type
    if (typeof p.name !== "string" || t.checks !== undefined || t.encoding !== undefined) return null
    const kind = t._tag === "Number" ? "number" : t._tag === "String" ? "string" : t._tag === "Boolean" ? "boolean" : null
    if (kind === null) return null
    props.push({ name: p.name, kind, optional: t.context?.isOptional === true })
  }
  return (u) => {
    if (typeof u !== "object" || u === null || Array.isArray(u)) return NOT_FAST
    const input = u as Record<string, unknown>
    const out: Record<string, unknown> = {}
    for (let i = 0; i < props.length; i++) {
      const p = props[i]!
      const v = input[p.name]
      if (v === undefined && !(p.name in input)) {
        if (p.optional) continue
        return NOT_FAST
      }
      if (typeof v !== p.kind) return NOT_FAST
      out[p.name] = v
    }
    return out
  }
}
const fastOf = (tool: Tool.Any): FastValidate | null => {
  let fast = fastValidators.get(tool)
  if (fast === undefined) {
    fast = compileFast(tool.parameters.ast)
    fastValidators.set(tool, fast)
  }
  return fast
}''')
rep('''  const exit = decoderOf(tool)(tool.coerce(raw))''', '''  if (F_VALIDATE) {
    const fast = fastOf(tool)
    if (fast !== null) {
      const value = fast(tool.coerce(raw))
      if (value !== NOT_FAST) return Effect.succeed(value)
    }
  }
  const exit = decoderOf(tool)(tool.coerce(raw))''')
rep('''import { Cause, Clock,''', '''import { SchemaAST } from "effect"
import { Cause, Clock,''')
# ---- eager: synchronous steps are chained without the runtime (Effect 4's *Eager combinators and plain
# loops over Exits); the runtime is entered only for user effects that are not already complete.
rep("""  const emitUnsafe = (sink as { emitUnsafe?: (event: AgentEvent) => void }).emitUnsafe
  if (F_SYNCSINK && emitUnsafe !== undefined) {""", """  const emitUnsafe = (sink as { emitUnsafe?: (event: AgentEvent) => void }).emitUnsafe
  if ((F_SYNCSINK || F_EAGER) && !F_ASYNCSINK && emitUnsafe !== undefined) {""")
rep("""    return {
      emit: call,
      bounded: () => call,""", """    // The work phase's events stop once it is abandoned; the settle phase's always go out.
    const call = (event: AgentEvent): Effect.Effect<void> => closed ? Effect.void : deliverNow(event)
    return {
      sync: true,
      emit: call,
      bounded: () => deliverNow,""")
rep("""  readonly close: () => void
} => {""", """  readonly close: () => void
  readonly sync?: boolean
} => {""")
rep("""  lastTimestamp: number
  clock?: Clock.Clock
}""", """  lastTimestamp: number
  clock?: Clock.Clock
  /** The sink delivers synchronously when `emit` is called (see safeEmit). */
  syncSink?: boolean
}""")
rep("""        lastTimestamp: 0,
        ...(clock ? { clock } : {})
      }""", """        lastTimestamp: 0,
        ...(clock ? { clock } : {}),
        ...(F_EAGER && emitter.sync ? { syncSink: true, clock: clock ?? (yield* Clock.Clock) } : {})
      }""")
rep("""      const work = mode === "sequential"
        ? runSequential(batch, calls)
        : runParallel(batch, calls, options.concurrency ?? "unbounded")""", """      const work = F_EAGER
        ? (mode === "sequential" ? runSequentialE(batch, calls) : runParallelE(batch, calls, options.concurrency ?? "unbounded"))
        : mode === "sequential"
        ? runSequential(batch, calls)
        : runParallel(batch, calls, options.concurrency ?? "unbounded")""")
rep("""// ---------------------------------------------------------------------------------------------------------
// After an abort""", """// ---------------------------------------------------------------------------------------------------------
// Eager variants (prototype): each returns an Exit when everything it ran was synchronous. They must be
// called at run time (inside suspend / flatMap callbacks), never while building an effect.
// ---------------------------------------------------------------------------------------------------------

/** Calls user code that returns an Effect; a synchronous throw becomes a defect, as under Effect.suspend. */
const callUser = <A, E, R>(f: () => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  try {
    return f()
  } catch (error) {
    return Effect.die(error)
  }
}

const passInterrupts = (cause: Cause.Cause<unknown>) => Cause.hasInterruptsOnly(cause)

const guardStageE = <A, R>(
  toolCall: ToolCall,
  stage: "prepareArguments" | "beforeToolCall",
  effect: () => Effect.Effect<A, unknown, R>
): Effect.Effect<A, PrepareFailed, R> =>
  Effect.matchCauseEffectEager(callUser(effect), {
    onSuccess: (a) => Effect.succeed(a),
    onFailure: (cause) =>
      passInterrupts(cause)
        ? Effect.failCause(cause as Cause.Cause<never>)
        : Effect.fail(new PrepareFailed({ toolCallId: toolCall.id, toolName: toolCall.name, message: causeMessage(cause), stage }))
  })

const prepareE = <R>(batch: Batch<R>, call: Call): Effect.Effect<Prepared, ImmediateOutcome, R> => {
  const { toolCall } = call
  const before = batch.before
  const entry = batch.registry.get(toolCall.name)
  if (entry === undefined || entry.tool.prepareArguments !== undefined || batch.seenIds.has(toolCall.id)) {
    // Rare paths (and the shim): the regular prepare, made eager where it composes.
    return prepare(batch, call)
  }
  call.stage = "preparing"
  batch.seenIds.add(toolCall.id)
  if (batch.skipReason !== undefined) {
    return Effect.fail(new ToolCallSkipped({ toolCallId: toolCall.id, toolName: toolCall.name, message: batch.skipReason }))
  }
  if (isAborted(batch)) return Effect.fail(abortedBeforeStart(toolCall))
  const validated = validateArguments(toolCall, entry.tool, toolCall.arguments)
  if (before === undefined) {
    return Effect.mapEager(validated, (args) => {
      call.stage = "prepared"
      return { call, entry, args }
    })
  }
  return Effect.flatMapEager(validated, (args) =>
    Effect.flatMapEager(
      guardStageE(toolCall, "beforeToolCall", () => before({ assistantMessage: batch.assistantMessage, toolCall, args, context: batch.context })),
      (decision): Effect.Effect<Prepared, ImmediateOutcome> => {
        if (decision && decision.block === true) {
          return Effect.fail(
            new ToolCallBlocked({
              toolCallId: toolCall.id,
              toolName: toolCall.name,
              message: decision.reason || "Tool execution was blocked",
              terminate: decision.terminate === true
            })
          )
        }
        if (isAborted(batch)) return Effect.fail(abortedBeforeStart(toolCall))
        const replaced = decision && decision.args !== undefined ? decision.args : args
        call.stage = "prepared"
        return Effect.succeed({ call, entry, args: replaced })
      }
    ))
}

/**
 * The handler is called right here (a throw becomes a defect). An effect that is already complete (an
 * Exit, e.g. `Effect.succeed(result)`) needs no fiber: nothing can hang or be interrupted. Anything else
 * runs in its own detached fiber exactly as before, so stopping and abandoning are unchanged.
 */
const executeE = <R>(batch: Batch<R>, prepared: Prepared): Effect.Effect<Finalized> => {
  const { call, entry } = prepared
  if (isAborted(batch)) return Effect.interrupt
  call.stage = "running"
  const ctx = new ToolContextImpl(batch, call)
  call.abort = () => ctx.abort()
  const eff = callUser(() => entry.handler(prepared.args, ctx))
  if (Exit.isExit(eff)) return Effect.succeed(executedResult(entry.tool, eff as Exit.Exit<ToolResult, unknown>))
  return forked(batch, call, entry, Effect.onInterrupt(eff, () => ctx.stopped()), entry.tool.timeout ?? batch.timeout, () => ctx.abort())
}

const applyOverride = (executed: Finalized, override: AfterToolCallResult | undefined | void): Finalized => {
  if (!override) return executed
  const { result } = executed
  const terminate = override.terminate ?? result.terminate
  return {
    result: {
      content: override.content ?? result.content,
      details: override.details ?? result.details,
      ...(terminate !== undefined ? { terminate } : {})
    },
    isError: override.isError ?? executed.isError
  }
}

const finalizeE = <R>(batch: Batch<R>, prepared: Prepared, executed: Finalized): Effect.Effect<Finalized, never, R> => {
  const after = batch.after
  if (after === undefined) return Effect.succeed(executed)
  prepared.call.stage = "finalizing"
  return Effect.matchCauseEffectEager(
    callUser(() =>
      after({
        assistantMessage: batch.assistantMessage,
        toolCall: prepared.call.toolCall,
        args: prepared.args,
        result: executed.result,
        isError: executed.isError,
        context: batch.context
      })
    ),
    {
      onSuccess: (override) => {
        try {
          return Effect.succeed(applyOverride(executed, override))
        } catch (error) {
          return Effect.succeed(errorResult(causeMessage(Cause.die(error))))
        }
      },
      onFailure: (cause) =>
        passInterrupts(cause) ? Effect.failCause(cause as Cause.Cause<never>) : Effect.succeed(errorResult(causeMessage(cause)))
    }
  )
}

const startEvent = (call: Call): AgentEvent => ({
  type: "tool_execution_start",
  toolCallId: call.toolCall.id,
  toolName: call.toolCall.name,
  args: call.toolCall.arguments
})

const emitStartE = <R>(batch: Batch<R>, call: Call): Effect.Effect<void> => {
  if (!batch.syncSink) return emitStart(batch, call)
  call.started = true
  return batch.emit(startEvent(call))
}

const emitEndE = <R>(batch: Batch<R>, call: Call, finalized: Finalized): Effect.Effect<void> => {
  if (!batch.syncSink) return emitEnd(batch, call, finalized)
  call.outcome = finalized
  call.ended = true
  call.stage = "settled"
  call.abort = undefined
  return batch.emit({
    type: "tool_execution_end",
    toolCallId: call.toolCall.id,
    toolName: call.toolCall.name,
    result: finalized.result,
    isError: finalized.isError
  })
}

const announceE = <R>(batch: Batch<R>, call: Call): Effect.Effect<void> => {
  if (!batch.syncSink) return announce(batch, call)
  const message = createMessage(batch, call, batch.clock!.currentTimeMillisUnsafe())
  call.announced = true
  return Effect.flatMapEager(batch.emit({ type: "message_start", message }), () => {
    call.messageEnded = true
    return batch.emit({ type: "message_end", message })
  })
}

/** Runs `f` over `items` in order, chaining complete (Exit) results in a plain loop; yields now and then. */
const forEachEager = <A, R>(
  items: ReadonlyArray<A>,
  f: (a: A) => Effect.Effect<void, never, R>,
  start = 0
): Effect.Effect<void, never, R> => {
  for (let i = start; i < items.length; i++) {
    const effect = f(items[i]!)
    if (!Exit.isExit(effect)) return Effect.flatMap(effect, () => forEachEager(items, f, i + 1))
    if (Exit.isFailure(effect)) return effect
    if ((i & 2047) === 2047 && i + 1 < items.length) return Effect.flatMap(Effect.yieldNow, () => forEachEager(items, f, i + 1))
  }
  return Effect.void
}

const immediateOrFail = (cause: Cause.Cause<ImmediateOutcome>) => {
  const outcome = Cause.findErrorOption(cause)
  return Option.isSome(outcome) ? Option.some(outcome.value) : Option.none()
}

const processCallE = <R>(batch: Batch<R>, call: Call): Effect.Effect<void, never, R> =>
  Effect.flatMapEager(emitStartE(batch, call), () => {
    const finalized: Effect.Effect<Finalized, never, R> = Effect.matchCauseEffectEager(prepareE(batch, call), {
      onFailure: (cause) => {
        const outcome = immediateOrFail(cause)
        return Option.isSome(outcome) ? Effect.succeed(immediateResult(outcome.value)) : Effect.failCause(cause as Cause.Cause<never>)
      },
      onSuccess: (prepared) => Effect.flatMapEager(executeE(batch, prepared), (executed) => finalizeE(batch, prepared, executed))
    })
    return Effect.flatMapEager(finalized, (f) => Effect.flatMapEager(emitEndE(batch, call, f), () => announceE(batch, call)))
  })

const runSequentialE = <R>(batch: Batch<R>, calls: ReadonlyArray<Call>): Effect.Effect<void, never, R> =>
  Effect.suspend(() => forEachEager(calls, (call) => processCallE(batch, call)))

const runParallelE = <R>(
  batch: Batch<R>,
  calls: ReadonlyArray<Call>,
  concurrency: number | "unbounded"
): Effect.Effect<void, never, R> =>
  Effect.suspend(() => {
    const prepared: Array<Prepared> = []
    const preflight = forEachEager(calls, (call) =>
      Effect.flatMapEager(emitStartE(batch, call), () =>
        Effect.matchCauseEffectEager(prepareE(batch, call), {
          onFailure: (cause) => {
            const outcome = immediateOrFail(cause)
            return Option.isSome(outcome) ? emitEndE(batch, call, immediateResult(outcome.value)) : Effect.failCause(cause as Cause.Cause<never>)
          },
          onSuccess: (p) => {
            prepared.push(p)
            return Effect.void
          }
        })))
    return Effect.flatMapEager(preflight, () =>
      Effect.flatMap(
        // A call whose effect is already complete (an Exit) is not forked by forEach.
        Effect.forEach(
          prepared,
          (p) =>
            Effect.flatMapEager(
              Effect.flatMapEager(executeE(batch, p), (executed) => finalizeE(batch, p, executed)),
              (finalized) => emitEndE(batch, p.call, finalized)
            ),
          { concurrency, discard: true }
        ),
        () => forEachEager(calls, (call) => announceE(batch, call))
      ))
  })

// ---------------------------------------------------------------------------------------------------------
// After an abort""")
open(p, 'w').write(s)

p = 'scratchpad/bench-src/EventSink.ts'
s = open(p).read()
rep('''export const fromCallback = (f: (event: AgentEvent) => void): EventSinkShape => ({
  emit: (event) => Effect.sync(() => f(event))
})''', '''export const fromCallback = (f: (event: AgentEvent) => void): EventSinkShape & { readonly emitUnsafe: (event: AgentEvent) => void } => ({
  emit: (event) => Effect.sync(() => f(event)),
  emitUnsafe: f
})''')
open(p, 'w').write(s)
print("patched")
