/**
 * The command policy (issue 16, item 5): judged on shell words, not substrings. Quoted text is data; quoting
 * cannot hide a command; every command of a chain, subshell or substitution is judged, behind any prefix.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { refusal } from "../../src/cli/CommandPolicy.ts"

const refused = (command: string) => assert.isDefined(refusal(command), `should be refused: ${command}`)
const allowed = (command: string) => assert.isUndefined(refusal(command), `should be allowed: ${command}`)

/** A command name that quoting cannot hide. */
const HIDDEN_PRIVILEGE = ["s''udo ls", "\"sudo\" ls", "su\\do ls", "/usr/bin/sudo ls", "s\"\"udo -i"]

describe("command policy", () => {
  it("refuses what the substring list let through (item 5)", () => {
    refused("rm -rf --no-preserve-root /")
    refused("rm -rf /*")
    refused("rm -rf ~")
    refused("rm -rf ~/")
    refused("rm -fr $HOME")
    refused("rm -r -f //")
    refused("rm --recursive --force /.")
    for (const command of HIDDEN_PRIVILEGE) refused(command)
    refused("su -c 'make install'")
    refused("su")
    refused("doas make install")
    refused("pkexec true")
    refused("dd if=/dev/zero of=/dev/sda bs=1M")
    refused("echo x > /dev/nvme0n1")
    refused("mkfs.ext4 /dev/sdb1")
  })

  it("reads quoted text as data", () => {
    allowed("echo 'never use sudo'")
    allowed("echo \"do not run rm -rf /\"")
    allowed("git commit -m 'sudo: rm -rf / is refused'")
    allowed("grep -r 'mkfs' src")
    allowed("echo sudo") // an argument, not a command
    allowed("ls # sudo in a comment")
  })

  it("lets ordinary commands through", () => {
    allowed("rm -rf build dist node_modules/.cache")
    allowed("rm -rf /tmp/effect-agent-x")
    allowed("rm -f /") // not recursive: rm refuses a folder anyway
    allowed("ls ~")
    allowed("rm -rf ~/project/tmp")
    allowed("npm test 2>/dev/null >/dev/null; echo done >&2")
    allowed("dd if=/dev/zero of=out.bin bs=1k count=1")
    allowed("dd if=/dev/urandom of=/dev/null count=1")
    allowed("cat <<'EOF' > notes.txt\nhello\nEOF")
    allowed("")
  })

  it("judges every command of a chain, subshell and substitution", () => {
    refused("make && sudo make install")
    refused("true; rm -rf /")
    refused("false || doas ls")
    refused("ls | sudo tee /etc/x")
    refused("sleep 1 & sudo ls")
    refused("(cd src; sudo ls)")
    refused("{ sudo ls; }")
    refused("echo $(sudo cat /etc/shadow)")
    refused("echo \"today: $(sudo date)\"")
    refused("echo `sudo id`")
    refused("diff <(sudo cat a) b")
    refused("if true; then sudo ls; fi")
    refused("while true; do rm -rf /*; done")
    refused("ls\nsudo ls")
    refused("ls \\\n && sudo ls")
  })

  it("looks through prefixes and into nested command lines", () => {
    refused("env FOO=1 sudo ls")
    refused("env -i -u HOME PATH=/bin sudo ls")
    refused("FOO=1 BAR=2 sudo ls")
    refused("nohup sudo ls &")
    refused("command sudo ls")
    refused("exec sudo ls")
    refused("time nice -n 5 sudo ls")
    refused("timeout -s KILL 5 sudo ls")
    refused("xargs -n 1 sudo rm < list")
    refused("bash -c 'sudo ls'")
    refused("sh -lc \"rm -rf /\"")
    refused("bash -c \"bash -c 'doas ls'\"")
    refused("eval 'sudo ls'")
    refused("env -S 'sudo ls'")
    refused("find . -name '*.o' -exec sudo rm {} \\;")
    refused("find / -maxdepth 0 -execdir rm -rf / +")
    allowed("find . -name '*.o' -exec rm {} \\; -print")
    allowed("env FOO=1 npm test")
    allowed("bash -c 'echo never use sudo'")
    allowed("timeout 5 npm test")
  })

  it.prop(
    "single-quoted text is data, whatever it says",
    [Schema.String.check(Schema.isPattern(/^[^']*$/))],
    ([text]) => {
      allowed(`echo '${text}'`)
      allowed(`printf '%s\\n' '${text}' | wc -l`)
    },
    { arbitrary: { runs: 300 } }
  )

  it.prop(
    "a refused command stays refused behind any prefix, chain or nesting",
    [
      Schema.Literals(["sudo ls", "rm -rf /", "rm -rf ~", "doas id", "su -c id", "dd of=/dev/sda", "mkfs /dev/sda"]),
      Schema.Array(
        Schema.Literals(["env A=1 ", "nohup ", "command ", "time ", "X=1 ", "true; ", "true && ", "false || ", "ls | "])
      ),
      Schema.Literals(["plain", "subshell", "braces", "substitution", "bash -c"])
    ],
    ([base, prefixes, wrap]) => {
      const inner = prefixes.join("") + base
      const command = wrap === "plain"
        ? inner
        : wrap === "subshell"
        ? `(${inner})`
        : wrap === "braces"
        ? `{ ${inner}; }`
        : wrap === "substitution"
        ? `echo "$(${inner})"`
        : `bash -c ${JSON.stringify(inner)}`
      refused(command)
    },
    { arbitrary: { runs: 300 } }
  )
})
