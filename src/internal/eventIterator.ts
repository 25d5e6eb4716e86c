/**
 * An `AsyncIterator` over the events of a run, for code without Effect (AL 3.7): the run delivers into a
 * plain buffer, the iterator drains it; `return` (a `break` out of `for await`) interrupts the run.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type { AgentEvent } from "../AgentEvent.ts"
import * as EventSink from "../EventSink.ts"

const DONE: IteratorResult<AgentEvent> = { done: true, value: undefined }

/** A caller of `next` waiting for an event. */
interface Waiter {
  readonly resolve: (result: IteratorResult<AgentEvent>) => void
  readonly reject: (error: unknown) => void
}

/**
 * The iterator of `agentLoopAsyncIterable`. The run delivers into a plain buffer (no Effect, no fiber
 * per event); the iterator drains it and waits only when it is empty. Unbounded like the run's own transcript:
 * every event is kept until read. `next` is a plain method (no async frame per event): a buffered event is
 * handed out at once.
 */
export class EventIterator implements AsyncIterator<AgentEvent> {
  buffer: Array<AgentEvent | undefined> = []
  head = 0
  exit: Exit.Exit<unknown, unknown> | undefined = undefined
  fiber: Fiber.Fiber<unknown, unknown> | undefined = undefined
  stopped = false
  /** Callers of `next` waiting for an event, oldest first (a `for await` has at most one). */
  readonly waiting: Array<Waiter> = []
  readonly run: (sink: EventSink.EventSinkShape) => Effect.Effect<unknown, unknown>
  readonly onEvent: (event: AgentEvent) => void
  readonly onExit: (exit: Exit.Exit<unknown, unknown>) => void
  /** `run` runs the work with the sink its events go to; it starts on the first `next`. */
  constructor(run: (sink: EventSink.EventSinkShape) => Effect.Effect<unknown, unknown>) {
    this.run = run
    this.onEvent = (event) => this.deliver(event)
    this.onExit = (exit) => this.ended(exit)
  }
  deliver(event: AgentEvent): void {
    this.buffer.push(event)
    if (this.waiting.length > 0) this.notify()
  }
  ended(exit: Exit.Exit<unknown, unknown>): void {
    this.exit = exit
    this.notify()
  }
  /** The next result if there is one now (throws the run's failure once it ended with one). */
  pull(): IteratorResult<AgentEvent> | undefined {
    const buffer = this.buffer
    if (this.head < buffer.length) {
      const value = buffer[this.head]!
      buffer[this.head++] = undefined
      if (this.head === buffer.length) {
        this.buffer = []
        this.head = 0
      } else if (this.head >= 4096 && this.head * 2 >= buffer.length) {
        // A run that keeps delivering while the reader catches up never empties the buffer: the read part is
        // dropped from time to time, so the buffer holds about what is unread (amortized O(1) per event).
        buffer.copyWithin(0, this.head)
        buffer.length -= this.head
        this.head = 0
      }
      return { done: false, value }
    }
    if (this.stopped) return DONE
    const exit = this.exit
    if (exit !== undefined) {
      if (Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause)) throw Cause.squash(exit.cause)
      return DONE
    }
    return undefined
  }
  notify(): void {
    const waiting = this.waiting
    while (waiting.length > 0) {
      let result: IteratorResult<AgentEvent> | undefined
      try {
        result = this.pull()
      } catch (error) {
        waiting.shift()!.reject(error)
        continue
      }
      if (result === undefined) return
      waiting.shift()!.resolve(result)
    }
  }
  start(): void {
    const fiber = Effect.runFork(this.run(EventSink.fromCallback(this.onEvent)))
    this.fiber = fiber
    fiber.addObserver(this.onExit)
  }
  next(): Promise<IteratorResult<AgentEvent>> {
    if (this.fiber === undefined && !this.stopped) this.start()
    if (this.waiting.length === 0) {
      try {
        const result = this.pull()
        if (result !== undefined) return Promise.resolve(result)
      } catch (error) {
        return Promise.reject(error)
      }
    }
    return new Promise<IteratorResult<AgentEvent>>((resolve, reject) => {
      this.waiting.push({ resolve, reject })
    })
  }
  async return(): Promise<IteratorResult<AgentEvent>> {
    const running = this.fiber
    if (running !== undefined && this.exit === undefined) await Effect.runPromise(Fiber.interrupt(running))
    this.buffer = []
    this.head = 0
    this.stopped = true
    this.notify()
    return DONE
  }
  async throw(error: unknown): Promise<IteratorResult<AgentEvent>> {
    await this.return()
    throw error
  }
}
