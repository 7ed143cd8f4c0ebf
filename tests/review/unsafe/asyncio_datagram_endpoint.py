# rule: PY-NET-001
# attempts: Network is unreachable
import asyncio


async def main():
    loop = asyncio.get_running_loop()
    await loop.create_datagram_endpoint(asyncio.DatagramProtocol, remote_addr=("203.0.113.9", 53))


asyncio.run(main())
