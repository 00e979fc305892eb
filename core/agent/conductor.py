"""Where channels hand over owner messages: one turn at a time per owner, restart, stop, delivery.

A message is stored (``awaiting``) before anything acknowledges it; its turn runs as a task,
restarted by a newer message and cancelled by ``/stop``. The reply is stored, the request
settled and the reply owed in one unit of work (``_deliver``), and only a stored reply is sent,
so nothing is lost to a crash and nothing is said twice; ``recover`` answers what a dead process
left. The whole story: docs/turn.md ("The conductor") and docs/reliability.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Mapping
from contextlib import nullcontext
from dataclasses import replace
from datetime import timedelta

from core.agent.listening import Listener
from core.agent.slots import DEFAULT_SLOTS, WorkSlots
from core.agent.store_retries import StoreRetries
from core.agent.turn import TurnDeps, TurnOutcome, run_turn
from core.agent.turn_context import TurnOrigin, begin
from core.attachments.media import NO_VISION_ALONE
from core.attachments.preparing import AttachmentReader
from core.errors import DeliveryFailed
from core.message import Appended, Inbound, Message, Role, StoredMessage
from core.owner import Identity, Owner
from core.ports import AudioSource, MediaSource, ReplySink, TurnLocks
from core.replies import Reply

log = logging.getLogger("nod.agent")
TURN_FAILED = "Something went wrong on my side and I couldn't answer. Please try again."
RECOVER_WITHIN = timedelta(hours=6)  # older requests left by a crash get a note, not a late answer
DELIVERY_GRACE = timedelta(minutes=5)  # a stored reply is resent only when no live delivery can still be trying
SEND_DEADLINE = timedelta(minutes=4)  # ... because a delivery (its retries and fallbacks) is cut off before then
STOP_WAIT = timedelta(seconds=10)  # a stop waits this long for replies being handed over (systemd allows 90 s)
TOO_LATE = ("Sorry, I was interrupted and couldn't answer your message of {when} in time. "
            "If you still need it, please ask again.")



class Conductor:
    def __init__(self, deps: TurnDeps, sink: ReplySink, locks: TurnLocks | None = None,
                 work_slots: int = DEFAULT_SLOTS, audio: Mapping[str, AudioSource] | None = None,
                 delivery_grace: timedelta = DELIVERY_GRACE, media: Mapping[str, MediaSource] | None = None) -> None:
        self._deps = deps
        self._sink = sink
        self._listener = Listener(deps.gateway, deps.messages, deps.uow, audio or {})
        self._reader = AttachmentReader(deps.messages, media or {}, lambda: deps.gateway.sees_images)
        self._locks_across = locks
        self._slots = WorkSlots(work_slots)
        self._turns: dict[int, asyncio.Task[None]] = {}
        self._starting: dict[int, asyncio.Task[None]] = {}
        self._locks: dict[int, asyncio.Lock] = {}
        self._sending: set[int] = set()  # replies whose first delivery runs in this process
        self._delivering: set[asyncio.Task[None]] = set()  # deliveries a stop waits for (``close``)
        self._retries = StoreRetries()
        self._delivery_grace = delivery_grace

    async def receive(self, owner: Owner, inbound: Inbound) -> StoredMessage | None:
        """Store the owner's message and start (or restart) the owner's turn for it.

        Returns the stored message, or None when it was a redelivery already handled.
        """
        async with self._slots.inbound():  # storing comes before any turn's work
            return await self._receive(owner, inbound)

    @property
    def can_listen(self) -> bool:
        """Whether voice notes are transcribed (a transcription model is configured)."""
        return self._deps.gateway.transcribe_configured

    @property
    def sees_images(self) -> bool:
        """Whether photos are shown to the agent model (NOD_AGENT_VISION, or what its server taught)."""
        return self._deps.gateway.sees_images

    async def keep(self, owner: Owner, inbound: Inbound) -> bool:
        """Store the message without a turn (a voice note Nod will not hear); False for a redelivery."""
        async with self._slots.inbound():
            return (await self._store(owner, inbound, request=False)).created

    async def _store(self, owner: Owner, inbound: Inbound, request: bool) -> Appended:
        """The asides, then the message itself, awaiting its answer when it is a ``request``."""
        now = self._deps.clock.now()
        sent_at = min(inbound.sent_at, now) if inbound.sent_at is not None else now  # a sender's clock may run ahead
        for number, aside in enumerate(inbound.asides, start=1):
            external = f"{inbound.external_id}#{number}" if inbound.external_id else None
            await self._deps.messages.append(Message(
                owner_id=owner.id, role=Role.OWNER, text=aside.text, channel=inbound.channel,
                sent_at=sent_at, external_id=external, forwarded=aside.forwarded, attachment=aside.attachment,
                origin=TurnOrigin.OWNER_MESSAGE.value, address=inbound.sender.external_id))
        return await self._deps.messages.append(
            Message(
                owner_id=owner.id, role=Role.OWNER, text=inbound.text, channel=inbound.channel,
                sent_at=sent_at, external_id=inbound.external_id,
                card_title=inbound.card_title, attachment=inbound.attachment, forwarded=inbound.forwarded,
                origin=TurnOrigin.OWNER_MESSAGE.value, address=inbound.sender.external_id, awaiting=request,
                voice_note=inbound.voice if request else None, media=inbound.media if request else None,
                platform_id=inbound.platform_id,
            )
        )

    async def edit(self, owner: Owner, inbound: Inbound) -> StoredMessage | None:
        """New words for the message the platform calls ``inbound.platform_id``, the old kept as its previous
        version. While it still awaits its answer its turn starts again, so the answer follows the new words;
        an answered one is not answered again. Returns the message when its turn was restarted."""
        if not inbound.platform_id or not inbound.text.strip():
            return None
        async with self._slots.inbound():
            edited = await self._deps.messages.edit(owner.id, inbound.channel, inbound.platform_id, inbound.text,
                                                   self._deps.clock.now())
        if edited is None or not edited.changed or not edited.message.awaiting:
            return None
        log.info("turn_restarted_by_edit owner=%s message=%s", owner.id, edited.message.id)
        self._starting[owner.id] = asyncio.create_task(self._start(owner, edited.message, inbound.sender))
        return edited.message

    async def _receive(self, owner: Owner, inbound: Inbound) -> StoredMessage | None:
        stored = await self._store(owner, inbound, request=True)
        if not stored.created:  # a redelivery (logged by the store): its first delivery has its turn
            return None
        # started beside the caller: a webhook is answered once its message is stored, not
        # after a turn it restarts has unwound; per-owner starts keep their arrival order
        starting = asyncio.create_task(self._start(owner, stored.message, inbound.sender))
        self._starting[owner.id] = starting
        return stored.message

    async def _started(self, owner_id: int) -> None:
        while (starting := self._starting.get(owner_id)) is not None and not starting.done():
            await asyncio.wait({starting})

    async def _start(self, owner: Owner, request: StoredMessage, sender: Identity, late: bool = False) -> None:
        lock = self._locks.setdefault(owner.id, asyncio.Lock())
        async with lock:
            running = self._turns.get(owner.id)
            if running is not None and not running.done():
                log.info("turn_restarted owner=%s by_message=%s", owner.id, request.id)
                running.cancel()
                await asyncio.wait({running})
            self._turns[owner.id] = asyncio.create_task(self._turn(owner, request, sender, late), name=f"turn-{owner.id}")

    def _busy(self, owner_id: int) -> bool:
        return any(task is not None and not task.done()
                   for task in (self._turns.get(owner_id), self._starting.get(owner_id)))

    async def recover(self, channels: Collection[str], owner_id: int | None = None) -> int:
        """Answer the requests a stopped process left awaiting on ``channels``, and send the
        replies it stored but never handed over; how many of either were taken up.

        Owners with a turn in this process are left to it. A turn taken up here still waits
        for the owner's lock and answers the owner's newest awaiting request, so a worker
        that is answering it already (or finishes first) keeps it, and it is never answered twice.
        """
        taken = await self._send_owed(channels, owner_id)
        now = self._deps.clock.now()
        for request in await self._deps.messages.awaiting_requests():
            if request.channel not in channels or self._busy(request.owner_id):
                continue
            if owner_id is not None and request.owner_id != owner_id:
                continue
            if not self._retries.due(request.id, now):
                continue
            owner = await self._deps.owners.by_id(request.owner_id)
            sender = await self._reply_address(owner, request)
            late = now - request.sent_at > RECOVER_WITHIN
            log.info("turn_recovered owner=%s message=%s late=%s", owner.id, request.id, late)
            self._starting[owner.id] = asyncio.create_task(self._start(owner, request, sender, late))
            taken += 1
        return taken

    async def _send_owed(self, channels: Collection[str], owner_id: int | None) -> int:
        """Replies stored at least ``delivery_grace`` ago that no channel took: a process died
        between storing and sending. Each is taken off the outbox first (one worker wins)."""
        now = self._deps.clock.now()
        sent = 0
        for owed in await self._deps.messages.undelivered(now - self._delivery_grace, channels):
            reply = owed.message
            if reply.id in self._sending:
                continue
            if (owner_id is not None and reply.owner_id != owner_id) or not await self._deps.messages.delivered(reply.id):
                continue
            if now - reply.sent_at > RECOVER_WITHIN:
                log.info("reply_not_resent owner=%s message=%s reason=too_old", reply.owner_id, reply.id)
                continue
            owner = await self._deps.owners.by_id(reply.owner_id)
            log.info("reply_resent owner=%s message=%s", owner.id, reply.id)
            await self._send(owner, await self._reply_address(owner, reply), Reply(reply.text, unprompted=owed.unprompted))
            sent += 1
        return sent

    async def _reply_address(self, owner: Owner, request: StoredMessage) -> Identity:
        if request.address:
            return Identity(request.channel, request.address)
        linked = [i for i in await self._deps.owners.identities(owner.id) if i.channel == request.channel]
        return linked[0] if linked else Identity(request.channel, owner.name)

    async def stop(self, owner_id: int) -> bool:
        """Cancel the owner's running turn and settle what awaits it; True if a turn ran."""
        await self._started(owner_id)
        running = self._turns.get(owner_id)
        await self._deps.messages.settle(owner_id)  # stopped means no answer is owed, also after a restart
        if running is None or running.done():
            return False
        running.cancel()
        log.info("turn_stopped owner=%s", owner_id)
        return True

    async def wait(self, owner_id: int) -> None:
        """Until the owner's current turn (if any) has finished, been stopped or restarted."""
        await self._started(owner_id)
        while (running := self._turns.get(owner_id)) is not None and not running.done():
            await asyncio.wait({running})
            await self._started(owner_id)

    async def close(self) -> None:
        for owner_id in list(self._starting):
            await self._started(owner_id)
        for task in self._turns.values():
            task.cancel()
        if self._turns:
            await asyncio.wait(set(self._turns.values()))
        if self._delivering:  # cut between the channel and its record, a reply would be sent again after the restart
            _, cut = await asyncio.wait(set(self._delivering), timeout=STOP_WAIT.total_seconds())
            if cut:
                log.warning("stopped_during_delivery replies=%s; recovery sends them after the restart", len(cut))

    async def _turn(self, owner: Owner, request: StoredMessage, sender: Identity, late: bool = False) -> None:
        across = self._locks_across.turn(owner.id) if self._locks_across is not None else nullcontext()
        try:
            async with across, self._slots.held():  # another worker's turn for this owner ends (and delivers) first
                newest = await self._deps.messages.newest_awaiting(owner.id)
                if newest is None:
                    log.info("turn_skipped owner=%s message=%s reason=answered", owner.id, request.id)
                    return
                if newest.id != request.id:  # a later request committed meanwhile (another worker, out of id order)
                    log.info("turn_answers_newest owner=%s message=%s newest=%s", owner.id, request.id, newest.id)
                    late = late and self._deps.clock.now() - newest.sent_at > RECOVER_WITHIN
                    request, sender = newest, await self._reply_address(owner, newest)
                if late:
                    when = request.sent_at.astimezone(owner.zone).strftime("%Y-%m-%d %H:%M")
                    await self._delivered(owner, request, sender, Reply(TOO_LATE.format(when=when)), notice=True)
                else:
                    await self._run(owner, request, sender)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - the lock or the owner's row failed (the database): apologise once
            log.exception("turn_failed owner=%s message=%s", owner.id, request.id)
            await self._delivered(owner, request, sender, Reply(TURN_FAILED), notice=True)

    async def _run(self, owner: Owner, request: StoredMessage, sender: Identity) -> None:
        heard = await self._listener.hear(request)  # a voice note becomes its transcript first
        if heard.notice is not None:
            await self._delivered(owner, request, sender, Reply(heard.notice), notice=True)
            return
        request = heard.request
        seen = await self._reader.read(request)  # photos and documents, into memory only
        if seen.nothing_to_answer:  # a file without a caption that could not be read: its sentence answers
            await self._delivered(owner, request, sender, Reply(seen.preface(False)), notice=True)
            return
        current = await self._deps_owner(owner)
        ctx = await begin(current, TurnOrigin.OWNER_MESSAGE, request.thread_id, request.id,
                          self._deps.memory, self._deps.spending)
        try:
            outcome = await run_turn(self._deps, ctx, request, seen)
        except asyncio.CancelledError:
            log.info("turn_cancelled owner=%s message=%s", owner.id, request.id)
            raise
        except Exception:  # noqa: BLE001 - the edge of the turn: log, apologise, go on
            log.exception("turn_failed owner=%s message=%s", owner.id, request.id)
            outcome = TurnOutcome(TURN_FAILED, notice=True)
        blind_now = bool(seen.images) and not self._deps.gateway.sees_images  # the server refused them this turn
        if blind_now and seen.silent_request and not outcome.notice:  # nothing but the photo, and it went unseen
            outcome = TurnOutcome(NO_VISION_ALONE, notice=True)
        preface = "" if outcome.notice and blind_now and seen.silent_request else seen.preface(blind_now)
        await self._delivered(current, request, sender, outcome.reply, outcome.notice, preface)

    async def _deps_owner(self, owner: Owner) -> Owner:
        """The owner as stored now: settings (spending, saving) may have changed since."""
        return await self._deps.owners.by_id(owner.id)

    async def _delivered(self, owner: Owner, request: StoredMessage, to: Identity, reply: Reply, notice: bool = False,
                         preface: str = "") -> None:
        """``_deliver`` run to its end even when the turn is cancelled, and waited for by ``close``:
        a stop never leaves a reply sent but not recorded, which recovery would send again."""
        task = asyncio.create_task(self._deliver(owner, request, to, reply, notice, preface))
        self._delivering.add(task)
        task.add_done_callback(self._delivering.discard)
        await asyncio.shield(task)

    async def _deliver(self, owner: Owner, request: StoredMessage, to: Identity, reply: Reply, notice: bool = False,
                       preface: str = "") -> None:
        """Store the reply, settle the request and owe the reply to its channel (one unit of work),
        then hand it to the channel.

        Nothing is sent that was not stored: when storing fails the request stays awaiting
        and recovery answers it later, once. The stored reply stays owed (the outbox) until
        the channel has taken it; the one window left is a crash after the channel took it
        and before that is recorded, when recovery sends it a second time.
        A notice (an apology) settles the request without being stored: it is not something
        Nod said in the conversation, and must not come back in later prompts as if it were.
        """
        reply = reply.bounded()
        try:
            async with self._deps.uow() as tx:
                if not await tx.requests.claim(request.id, owner.id):
                    log.info("reply_not_stored owner=%s answers=%s reason=settled notice=%s", owner.id, request.id, notice)
                    return  # answered elsewhere meanwhile, or stopped: never a second reply
                stored = None if notice else (await tx.messages.append(Message(
                    owner.id, Role.ASSISTANT, reply.text_form(), to.channel, self._deps.clock.now(),
                    origin=TurnOrigin.OWNER_MESSAGE.value, address=to.external_id))).message
                if stored is not None:
                    await tx.outbox.owe(stored)
        except Exception:  # noqa: BLE001 - the database failed: send nothing, recovery answers later
            log.exception("reply_not_stored owner=%s message=%s; not sent, left for recovery", owner.id, request.id)
            self._retries.failed(request.id, self._deps.clock.now())
            return
        log.info("request_settled owner=%s answers=%s by=%s", owner.id, request.id,
                 "notice" if stored is None else f"reply message={stored.id}")
        self._retries.stored(request.id)
        if preface:  # sentences about the owner's files (no vision, too large): sent, not stored
            reply = replace(reply, text=f"{preface}\n\n{reply.text}")
        if stored is None:
            await self._send(owner, to, reply)
            return
        self._sending.add(stored.id)
        try:
            await self._send(owner, to, reply)
            await self._deps.messages.delivered(stored.id)
        except Exception:  # noqa: BLE001 - sent but not recorded: recovery may send it once more
            log.exception("reply_delivery_unrecorded owner=%s message=%s", owner.id, stored.id)
        finally:
            self._sending.discard(stored.id)

    async def _send(self, owner: Owner, to: Identity, reply: Reply) -> None:
        """Hand the reply to its channel, within ``SEND_DEADLINE``; a channel that gives up is logged
        (the reply is stored)."""
        try:
            await asyncio.wait_for(self._sink.deliver(owner, to, reply), SEND_DEADLINE.total_seconds())
        except TimeoutError:
            log.warning("reply_delivery_failed owner=%s channel=%s code=deadline", owner.id, to.channel)
        except DeliveryFailed as exc:
            log.warning("reply_delivery_failed owner=%s channel=%s code=%s error=%s", owner.id, to.channel, exc.code, exc)
        except Exception:  # noqa: BLE001 - a channel failure is logged, never raised into the core
            log.exception("reply_delivery_failed owner=%s channel=%s", owner.id, to.channel)
