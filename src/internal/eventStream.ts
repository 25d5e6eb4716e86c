/**
 * The events of a run or a batch as a `Stream`: the work runs in a fiber of the stream's scope with a sink
 * that buffers each event, and the stream ends when the work has returned.
 */
import type * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Channel from "effect/Channel"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Pull from "effect/Pull"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../AgentEvent.ts"
import * as EventSink from "../EventSink.ts"

/**
 * Events on their way from the work to the stream's reader. A waiting reader is woken in a microtask, with
 * everything delivered until then as one chunk, as a Promise's reader would be. (A `Queue` wakes it in a
 * scheduler task: one `setImmediate` more per wait, 2 001 against 1 000 for 1 000 sequential calls of
 * tools that each wait for the event loop.)
 */
class Mailbox<A, E> {
  items: Array<A> = []
  exit: Exit.Exit<unknown, E> | undefined = undefined
  reader: ((next: Effect.Effect<Arr.NonEmptyReadonlyArray<A>, E | Cause.Done>) => void) | undefined = undefined
  waking = false
  readonly offer = (item: A): void => {
    this.items.push(item)
    this.wakeSoon()
  }
  readonly end = (exit: Exit.Exit<unknown, E>): void => {
    this.exit = exit
    this.wakeSoon()
  }
  wakeSoon(): void {
    if (this.reader === undefined || this.waking) return
    this.waking = true
    queueMicrotask(this.wake)
  }
  readonly wake = (): void => {
    this.waking = false
    const reader = this.reader
    const next = this.next()
    if (reader === undefined || next === undefined) return
    this.reader = undefined
    reader(next)
  }
  /** What the reader gets now: the buffered events, the end, the work's failure, or nothing yet. */
  next(): Effect.Effect<Arr.NonEmptyReadonlyArray<A>, E | Cause.Done> | undefined {
    if (this.items.length > 0) {
      const items = this.items as unknown as Arr.NonEmptyReadonlyArray<A>
      this.items = []
      return Effect.succeed(items)
    }
    if (this.exit === undefined) return undefined
    return Exit.isSuccess(this.exit) ? Cause.done() : Effect.failCause(this.exit.cause)
  }
  readonly pull: Pull.Pull<Arr.NonEmptyReadonlyArray<A>, E> = Effect.suspend(() =>
    this.next() ?? Effect.callback((resume) => {
      this.reader = resume
      return Effect.sync(() => {
        this.reader = undefined
      })
    })
  )
}

/** `work` as the Stream of the events it emits; stopping the stream early interrupts the work. */
export const eventStream = <A extends AgentEvent, E, R>(work: Effect.Effect<unknown, E, R>): Stream.Stream<A, E, R> =>
  Stream.fromChannel(Channel.fromTransform((_, scope) => {
    const mailbox = new Mailbox<A, E>()
    const sink = EventSink.fromCallback((event) => mailbox.offer(event as A))
    return work.pipe(
      Effect.provideService(EventSink.EventSink, sink),
      Effect.forkIn(scope, { startImmediately: true }),
      Effect.map((fiber) => {
        fiber.addObserver(mailbox.end)
        return mailbox.pull
      })
    )
  }))
