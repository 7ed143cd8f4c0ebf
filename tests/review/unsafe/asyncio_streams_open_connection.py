# rule: PY-NET-001
# attempts: Network is unreachable
import asyncio.streams


async def main():
    await asyncio.streams.open_connection("203.0.113.9", 80)


asyncio.run(main())
