# rule: PY-PROC-001
# attempts: pwned-42
import asyncio


async def main():
    proc = await asyncio.create_subprocess_shell("echo pwned-$((6*7))")
    await proc.wait()


asyncio.run(main())
