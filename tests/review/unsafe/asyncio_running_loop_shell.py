# rule: PY-PROC-001
# attempts: pwned-42
import asyncio


async def main():
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    class Proto(asyncio.SubprocessProtocol):
        def process_exited(self):
            done.set_result(True)

    await loop.subprocess_shell(Proto, "echo pwned-$((6*7))", stdout=None, stderr=None)
    await done


asyncio.run(main())
