# rule: PY-PROC-001
# attempts: pwned-42
import asyncio

loop = asyncio.new_event_loop()


async def main():
    done = loop.create_future()

    class Proto(asyncio.SubprocessProtocol):
        def process_exited(self):
            done.set_result(True)

    await loop.subprocess_exec(Proto, "sh", "-c", "echo pwned-$((6*7))", stdout=None, stderr=None)
    await done


loop.run_until_complete(main())
