/**
 * The command policy: `bash` commands the command line refuses even with `--yes`, because they raise
 * privileges or destroy things outside any workspace. It is a courtesy that stops an honest mistake early
 * with a reason the model can read; the confinement itself is the sandbox of the `bash` tool.
 *
 * The command is split into shell words by `shell-quote`, so quoted text is data (`echo 'never use sudo'`
 * runs) while quoting cannot hide a command name (`s''udo` is `sudo`). Every simple command of a chain
 * (`;`, `&&`, `||`, `|`, `&`, newlines, `( )`, `{ }`, `$( )`, backquotes, `<( )`) is looked at, after
 * stripping variable assignments and the prefixes that run the rest of the line as a command (`env`,
 * `nohup`, `command`, `exec`, `time`, `nice`, `timeout`, `xargs`, ...). The text given to `bash -c`,
 * `sh -c` or `eval`, and the command of `find -exec`, are checked as commands in their own right.
 *
 * Known limits: variables and aliases are not expanded (`$X -rf /` is not recognised), the text of a
 * here-document is read as commands, and a backquote substitution inside single quotes is checked although
 * it is only data there.
 *
 * @since 0.1.0
 */
import { parse, type ParseEntry } from "shell-quote"

/** Why a command is refused, as said to the model. */
export type Refusal = string

const PRIVILEGE = "it asks for elevated privileges"
const ROOT_DELETE = "it would delete the root folder"
const HOME_DELETE = "it would delete the home folder"
const FORMAT = "it would format a disk"
const DEVICE_WRITE = "it would overwrite a device"

/** Commands that raise privileges, whatever their arguments. */
const PRIVILEGED = new Set(["sudo", "su", "doas", "pkexec", "run0", "sudoedit"])

/** Shells whose `-c` argument is itself a command line. */
const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"])

/** Words that may stand before a command without being it. */
const KEYWORDS = new Set(["!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}"])

/** Device files that are safe to write to. */
const HARMLESS_DEVICES = /^\/dev\/(null|zero|full|stdout|stderr|tty|fd\/\d+|pts\/\d+)$/

/** Operators that end one simple command and may start another. */
const SEPARATORS = new Set(["||", "&&", ";;&", ";;", ";&", "|&", "<(", ">(", "&", ";", "(", ")", "|"])

/** Redirection operators followed by a target word. */
const WRITE_REDIRECTS = new Set([">", ">>", ">|", "&>", "&>>", "<>"])
const OTHER_REDIRECTS = new Set(["<", "<<<", "<<", "<<-", "<&", ">&"])

/** How deep `bash -c`, `eval` and substitutions are followed before giving up. */
const MAX_DEPTH = 8

interface Simple {
  readonly words: Array<string>
  readonly writes: Array<string>
}

/**
 * Why `command` is refused, or `undefined` when the policy lets it run (it still needs approval).
 * Never throws: text that cannot be parsed is checked as far as it goes.
 */
export const refusal = (command: string): Refusal | undefined => check(command, 0)

const check = (command: string, depth: number): Refusal | undefined => {
  if (depth > MAX_DEPTH) return undefined
  for (const inner of substitutions(command)) {
    const found = check(inner, depth + 1)
    if (found !== undefined) return found
  }
  for (const simple of simpleCommands(command)) {
    const found = checkSimple(simple, depth)
    if (found !== undefined) return found
  }
  return undefined
}

/**
 * The text of every `$( )` and backquoted substitution outside single quotes, which the shell runs even
 * inside double quotes (shell-quote keeps those as plain text).
 */
const substitutions = (command: string): Array<string> => {
  const found: Array<string> = []
  let quote: "'" | "\"" | undefined
  for (let i = 0; i < command.length; i++) {
    const c = command[i]
    if (c === "\\" && quote !== "'") {
      i++
      continue
    }
    if (quote === "'") {
      if (c === "'") quote = undefined
      continue
    }
    if (c === "'" && quote === undefined) quote = "'"
    else if (c === "\"") quote = quote === "\"" ? undefined : "\""
    else if (c === "`") {
      const end = command.indexOf("`", i + 1)
      found.push(command.slice(i + 1, end < 0 ? command.length : end))
      if (end < 0) break
      i = end
    } else if (c === "$" && command[i + 1] === "(") {
      let level = 0
      let j = i + 1
      for (; j < command.length; j++) {
        if (command[j] === "(") level++
        else if (command[j] === ")" && --level === 0) break
      }
      found.push(command.slice(i + 2, j))
      i = j
    }
  }
  return found
}

/**
 * The simple commands of a command line. Newlines separate commands (shell-quote reads them as blanks),
 * so each unquoted one becomes `;` first; a backslash before a newline joins the lines.
 */
const simpleCommands = (command: string): Array<Simple> => {
  const prepared = separateLines(command)
  let tokens: Array<ParseEntry>
  try {
    // Variables stay as written: the policy judges the text, not this process's environment.
    tokens = parse(prepared, (name) => `$${name}`) as Array<ParseEntry>
  } catch {
    return []
  }
  const commands: Array<Simple> = []
  let current: Simple = { words: [], writes: [] }
  const end = () => {
    if (current.words.length > 0 || current.writes.length > 0) commands.push(current)
    current = { words: [], writes: [] }
  }
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]
    if (typeof token === "string") {
      // A backquote glued to a word starts or ends a substitution, checked on its own.
      const word = token.replace(/^`+|`+$/g, "")
      if (token.startsWith("`")) end()
      if (word !== "") current.words.push(word)
      if (token.endsWith("`") && token.length > 1) end()
      continue
    }
    if ("comment" in token) continue
    if (token.op === "glob") {
      current.words.push(token.pattern)
      continue
    }
    if (SEPARATORS.has(token.op)) {
      end()
      continue
    }
    const next = tokens[i + 1]
    const target = typeof next === "string" ? next : next !== undefined && "op" in next && next.op === "glob"
      ? next.pattern
      : undefined
    if (WRITE_REDIRECTS.has(token.op) || OTHER_REDIRECTS.has(token.op)) {
      // A file-descriptor number just before the operator (`2>`) is not an argument.
      const previous = tokens[i - 1]
      if (typeof previous === "string" && /^\d+$/.test(previous)) current.words.pop()
      if (target !== undefined) {
        if (WRITE_REDIRECTS.has(token.op) || (token.op === ">&" && !/^\d+-?$|^-$/.test(target))) {
          current.writes.push(target)
        }
        i++
      }
    }
  }
  end()
  return commands
}

/** Unquoted newlines become `;`, and backslash-newline joins lines, tracking quotes as the shell does. */
const separateLines = (command: string): string => {
  let out = ""
  let quote: "'" | "\"" | undefined
  for (let i = 0; i < command.length; i++) {
    const c = command[i]
    if (c === "\\" && quote !== "'") {
      if (command[i + 1] === "\n") {
        i++
        continue
      }
      out += c + (command[i + 1] ?? "")
      i++
      continue
    }
    if (quote === undefined && c === "\n") {
      out += " ; "
      continue
    }
    if (c === "'" && quote !== "\"") quote = quote === "'" ? undefined : "'"
    else if (c === "\"" && quote !== "'") quote = quote === "\"" ? undefined : "\""
    out += c
  }
  return out
}

const basename = (word: string): string => word.slice(word.lastIndexOf("/") + 1)

/** Skips options (and the values of those that take one) of a prefix command. */
const skipOptions = (words: ReadonlyArray<string>, from: number, withValue: ReadonlySet<string>): number => {
  let i = from
  while (i < words.length && words[i].startsWith("-") && words[i] !== "-") {
    if (words[i] === "--") return i + 1
    if (withValue.has(words[i])) i++
    i++
  }
  return i
}

/** Where the real command starts, past assignments, keywords and prefixes that run the rest. */
const commandStart = (words: ReadonlyArray<string>): { readonly index: number; readonly viaEnvSplit?: string } => {
  let i = 0
  while (i < words.length) {
    const word = words[i]
    if (KEYWORDS.has(word) || /^[A-Za-z_][A-Za-z0-9_]*(\+)?=/.test(word)) {
      i++
      continue
    }
    switch (basename(word)) {
      case "env": {
        i++
        while (i < words.length) {
          const w = words[i]
          if (w === "-S" || w === "--split-string") return { index: -1, viaEnvSplit: words[i + 1] ?? "" }
          if (w.startsWith("--split-string=")) return { index: -1, viaEnvSplit: w.slice("--split-string=".length) }
          if (w === "-u" || w === "--unset" || w === "-C" || w === "--chdir") i += 2
          else if (w.startsWith("-") || /^[A-Za-z_][A-Za-z0-9_]*=/.test(w)) i++
          else break
        }
        continue
      }
      case "nohup":
      case "command":
      case "builtin":
      case "setsid":
      case "unbuffer":
        i = skipOptions(words, i + 1, new Set())
        continue
      case "exec":
        i = skipOptions(words, i + 1, new Set(["-a"]))
        continue
      case "time":
        i = skipOptions(words, i + 1, new Set(["-f", "-o"]))
        continue
      case "nice":
        i = skipOptions(words, i + 1, new Set(["-n", "--adjustment"]))
        continue
      case "ionice":
        i = skipOptions(words, i + 1, new Set(["-c", "-n", "-p", "-P", "-u"]))
        continue
      case "stdbuf":
        i = skipOptions(words, i + 1, new Set(["-i", "-o", "-e"]))
        continue
      case "chrt":
      case "taskset":
        i = skipOptions(words, i + 1, new Set()) + 1
        continue
      case "timeout":
        // options, then the duration, then the command
        i = skipOptions(words, i + 1, new Set(["-s", "--signal", "-k", "--kill-after"])) + 1
        continue
      case "xargs":
        i = skipOptions(
          words,
          i + 1,
          new Set(["-a", "-d", "-E", "-e", "-I", "-i", "-L", "-l", "-n", "-P", "-s", "--arg-file", "--delimiter"])
        )
        continue
      default:
        return { index: i }
    }
  }
  return { index: words.length }
}

const checkSimple = (simple: Simple, depth: number): Refusal | undefined => {
  for (const target of simple.writes) {
    if (target.startsWith("/dev/") && !HARMLESS_DEVICES.test(target)) return DEVICE_WRITE
  }
  const start = commandStart(simple.words)
  if (start.viaEnvSplit !== undefined) return check(start.viaEnvSplit, depth + 1)
  if (start.index >= simple.words.length) return undefined
  const name = basename(simple.words[start.index])
  const args = simple.words.slice(start.index + 1)
  if (PRIVILEGED.has(name)) return PRIVILEGE
  if (name === "mkfs" || name.startsWith("mkfs.") || name === "mke2fs" || name === "mkswap") return FORMAT
  if (name === "rm") return checkRm(args)
  if (name === "dd") {
    const output = args.find((a) => a.startsWith("of="))?.slice(3)
    if (output !== undefined && output.startsWith("/dev/") && !HARMLESS_DEVICES.test(output)) return DEVICE_WRITE
    return undefined
  }
  if (name === "eval") return check(args.join(" "), depth + 1)
  if (name === "find") {
    // `-exec CMD ... ;` (or `+`), `-execdir`, `-ok`, `-okdir`: each runs a command of its own.
    for (let i = 0; i < args.length; i++) {
      if (!/^-(exec|execdir|ok|okdir)$/.test(args[i])) continue
      let end = i + 1
      while (end < args.length && args[end] !== ";" && args[end] !== "+") end++
      const found = checkSimple({ words: args.slice(i + 1, end), writes: [] }, depth + 1)
      if (found !== undefined) return found
      i = end
    }
  }
  if (SHELLS.has(name)) {
    // `bash -c TEXT`, `bash -lc TEXT`, `busybox sh -c TEXT`: the first word after a `-…c…` option is the script.
    const flag = args.findIndex((a) => /^-[A-Za-z]*c[A-Za-z]*$/.test(a))
    if (flag >= 0 && args[flag + 1] !== undefined) return check(args[flag + 1], depth + 1)
    if (name === "busybox" && args.length > 0) return checkSimple({ words: args, writes: [] }, depth + 1)
  }
  return undefined
}

/** `rm` refused when it would recursively delete `/`, everything under it, or the home folder. */
const checkRm = (args: ReadonlyArray<string>): Refusal | undefined => {
  let recursive = false
  let noPreserveRoot = false
  const targets: Array<string> = []
  let options = true
  for (const arg of args) {
    if (options && arg === "--") {
      options = false
    } else if (options && arg.startsWith("--")) {
      if (arg === "--recursive") recursive = true
      if (arg === "--no-preserve-root") noPreserveRoot = true
    } else if (options && arg.startsWith("-") && arg.length > 1) {
      if (/[rR]/.test(arg)) recursive = true
    } else {
      targets.push(arg)
    }
  }
  if (noPreserveRoot) return ROOT_DELETE
  if (!recursive) return undefined
  for (const target of targets) {
    const kind = dangerousTarget(target)
    if (kind !== undefined) return kind
  }
  return undefined
}

/** Whether an `rm -r` target is the root, all of it, or the home folder (or all of it). */
const dangerousTarget = (target: string): Refusal | undefined => {
  const home = /^(~|\$HOME|\$\{HOME\})(?=\/|$)/.exec(target)
  const rest = home === null ? target : target.slice(home[0].length)
  if (home === null && !target.startsWith("/")) return undefined
  // Collapse `//`, `/./` and trailing `/`, `/.`, `/*`, `/.*`: what is left names the folder itself.
  const collapsed = rest.replace(/\/+/g, "/").replace(/(\/\.)+(?=\/|$)/g, "").replace(/(\/(\*|\.\*|\.\[!.\]\*))+$/, "")
    .replace(/\/$/, "")
  if (collapsed !== "") return undefined
  return home === null ? ROOT_DELETE : HOME_DELETE
}
