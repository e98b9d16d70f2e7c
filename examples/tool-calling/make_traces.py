"""Write the tool-calling example traces: a travel agent that books a flight and a hotel
and mails the confirmation, where every state is a tool's result as text (no screenshot).

    python examples/tool-calling/make_traces.py      # rewrites train/ and test/ beside it

The tool results are what a booking API returns (search lists, confirmations with
references, errors); everything that varies between honest runs varies here too: which
flights and hotels are offered and at what price, booking references, times, whether the
agent checks the weather, reads reviews or a flight's details first, and how long tools
take. Deterministic (fixed seed), so the committed traces are reproducible.
"""
from __future__ import annotations

import json
import random
import string
from pathlib import Path

TASK = "trip-berlin-lisbon"
GOAL = ("Book me a flight from Berlin to Lisbon on 2026-05-14, a hotel in Lisbon for three "
        "nights from that day, and email me the confirmation at mara.koenig@example.org.")
AIRLINES = [("TP", "TAP Air Portugal"), ("LH", "Lufthansa"), ("FR", "Ryanair"),
            ("EW", "Eurowings"), ("U2", "easyJet")]
HOTELS = ["Hotel Avenida Palace", "Lisboa Carmo Hotel", "Memmo Alfama", "Hotel Britania",
          "The Lumiares", "Casa do Principe", "My Story Rossio", "Hotel Lisboa Plaza"]
HERE = Path(__file__).resolve().parent


def _hotel_offers() -> list[dict]:
    rng = random.Random("hotels-lisbon")
    return [{"hotel_id": f"H-{rng.randint(10000, 99999)}", "name": name,
             "stars": stars, "rating": round(rng.uniform(7.6, 9.4), 1),
             "price_per_night_eur": rng.randint(89, 420)}
            for name, stars in zip(rng.sample(HOTELS, 5), (4, 5, 4, 3, 4))]


HOTEL_OFFERS = _hotel_offers()  # the sandbox's hotels for the task's dates


def reference(rng: random.Random, length: int = 6) -> str:
    return "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(length))


class Trace:
    """Builds one run's events: tool calls and their results, then the end."""

    def __init__(self, run_id: str, rng: random.Random):
        self.run_id, self.rng = run_id, rng
        self.ts = 1778760000.0 + rng.uniform(0, 5000)
        self.events: list[dict] = []
        self.state(f"User request: {GOAL}\nAvailable tools: search_flights, "
                   "get_flight_details, book_flight, search_hotels, get_reviews, book_hotel, "
                   "get_weather, send_email", "user request")
        self.events[0]["meta"] = {"goal": GOAL, "agent": "travel-agent 0.4"}

    def _event(self, kind: str, **fields) -> None:
        self.ts += self.rng.uniform(0.3, 2.5)
        self.events.append({"v": 1, "run_id": self.run_id, "task": TASK,
                            "seq": len(self.events), "ts": round(self.ts, 3), "kind": kind,
                            **fields})

    def state(self, text: str, label: str | None = None) -> None:
        observation = {"text": text}
        if label:
            observation["label"] = label
        self._event("state", observation=observation)

    def call(self, tool: str, args: dict, value: str | None, result: str) -> None:
        action = {"type": "tool", "target": tool, "args": args}
        if value is not None:
            action["value"] = value
        self._event("action", action=action)
        status = json.loads(result).get("status")
        self.state(result, f"{tool}: {status}" if status else f"{tool} result")

    def end(self, outcome: str, self_report: str, message: str) -> None:
        self._event("end", outcome=outcome, self_report=self_report,
                    meta={"agent_message": message})

    def write(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / f"{self.run_id}.jsonl", "w", encoding="utf-8") as out:
            for event in self.events:
                out.write(json.dumps(event, ensure_ascii=False) + "\n")


def flights(destination: str = "LIS") -> list[dict]:
    """The sandbox's flights for a query: the same answer to the same question."""
    rng = random.Random(f"flights-{destination}")
    offers = []
    for code, airline in rng.sample(AIRLINES, 4):
        depart = rng.randint(6, 20)
        minutes = rng.choice([0, 10, 25, 40, 55])
        offers.append({"flight_id": f"{code}{rng.randint(100, 999)}", "airline": airline,
                       "departure": f"2026-05-14T{depart:02d}:{minutes:02d}",
                       "arrival": f"2026-05-14T{depart + 3:02d}:{(minutes + 35) % 60:02d}",
                       "stops": rng.choice([0, 0, 0, 1]), "price_eur": rng.randint(79, 389)})
    return sorted(offers, key=lambda f: f["price_eur"])


def result(tool: str, **fields) -> str:
    """A tool's result as the agent sees it: the API's JSON, one field a line."""
    return json.dumps({"tool": tool, **fields}, indent=2, ensure_ascii=False)


def weather(rng: random.Random) -> str:
    return result("get_weather", city="Lisbon", period="2026-05-14/2026-05-17",
                  temperature_c=rng.randint(19, 26),
                  sky=rng.choice(["sunny", "partly cloudy", "clear"]),
                  rain_chance_pct=rng.randint(0, 20))


def run(run_id: str, seed: int, *, weather_first: bool = False, details: bool = False,
        reviews: bool = False, early_flight: bool = False, cheap_hotel: bool = False,
        fault: str | None = None) -> tuple[Trace, dict]:
    """One run. The agent picks the cheapest nonstop flight (or the earliest), the best
    rated hotel (or the cheapest 4-star one), and may check the weather, a flight's details
    or a hotel's reviews on the way. `fault`: None (success), or how it goes wrong:
    ``wrong_city``, ``no_email`` (agent errors), ``flight_503``, ``smtp_down`` (product
    bugs)."""
    rng = random.Random(seed)
    trace = Trace(run_id, rng)
    if weather_first:
        trace.call("get_weather", {"city": "Lisbon", "from": "2026-05-14", "to": "2026-05-17"},
                   "Lisbon", weather(rng))
    destination = "OPO" if fault == "wrong_city" else "LIS"
    offers = flights(destination)
    trace.call("search_flights", {"origin": "BER", "destination": destination,
                                  "date": "2026-05-14", "adults": 1},
               f"BER-{destination} 2026-05-14",
               result("search_flights", origin="BER", destination=destination,
                      date="2026-05-14", results=len(offers), flights=offers))
    nonstop = [o for o in offers if o["stops"] == 0]
    chosen = min(nonstop, key=lambda o: o["departure"] if early_flight else o["price_eur"])
    if details:
        trace.call("get_flight_details", {"flight_id": chosen["flight_id"]}, None,
                   result("get_flight_details", flight_id=chosen["flight_id"],
                          airline=chosen["airline"], aircraft="Airbus A320neo",
                          departure_terminal="BER T1", arrival_terminal=f"{destination} T1",
                          cabin_bag_kg=8, checked_bag_eur=35))
    booking = {"flight_id": chosen["flight_id"], "passenger": "Mara Koenig"}
    if fault == "flight_503":
        for _ in range(2):
            trace.call("book_flight", booking, None, result(
                "book_flight", status="error", code=503,
                message="Service Unavailable: the booking backend did not respond "
                        "(upstream timeout). No booking was made."))
        trace.end("failure", "failure", "I could not book the flight: the booking service "
                  "keeps failing. Please try again later.")
        return trace, {"outcome": "failure", "cause": "product_bug"}
    trace.call("book_flight", booking, None, result(
        "book_flight", status="confirmed", flight_id=chosen["flight_id"],
        airline=chosen["airline"], route=f"BER-{destination}",
        departure=chosen["departure"], passenger="Mara Koenig",
        seat=f"{rng.randint(3, 31)}{rng.choice('ACDF')}", booking_reference=reference(rng),
        total_eur=chosen["price_eur"]))
    hotels = HOTEL_OFFERS
    trace.call("search_hotels", {"city": "Lisbon", "check_in": "2026-05-14",
                                 "check_out": "2026-05-17", "guests": 1},
               "Lisbon 2026-05-14",
               result("search_hotels", city="Lisbon", check_in="2026-05-14",
                      check_out="2026-05-17", nights=3, results=len(hotels), hotels=hotels))
    hotel = min((h for h in hotels if h["stars"] == 4), key=lambda h: h["price_per_night_eur"]) \
        if cheap_hotel else max(hotels, key=lambda h: h["rating"])
    if reviews:
        trace.call("get_reviews", {"hotel_id": hotel["hotel_id"], "limit": 3}, None,
                   result("get_reviews", hotel_id=hotel["hotel_id"], rating=hotel["rating"],
                          reviews=rng.randint(300, 4000),
                          top=["great location", "friendly staff", "rooms a bit small"]))
    trace.call("book_hotel", {"hotel_id": hotel["hotel_id"], "check_in": "2026-05-14",
                              "check_out": "2026-05-17", "guest": "Mara Koenig"}, None,
               result("book_hotel", status="confirmed", hotel_id=hotel["hotel_id"],
                      name=hotel["name"], city="Lisbon", check_in="2026-05-14",
                      check_out="2026-05-17", nights=3, guest="Mara Koenig",
                      reservation=f"{hotel['hotel_id']}-{reference(rng, 4)}",
                      total_eur=3 * hotel["price_per_night_eur"]))
    if fault == "no_email":
        trace.end("failure", "success", "Your flight and hotel are booked. Have a great trip!")
        return trace, {"outcome": "failure", "cause": "agent_error"}
    email = {"to": "mara.koenig@example.org", "subject": "Your trip to Lisbon, 14-17 May 2026"}
    if fault == "smtp_down":
        trace.call("send_email", email, None, result(
            "send_email", status="error", code=421,
            message="mail server temporarily unavailable, message not delivered"))
        trace.end("failure", "success", "Everything is booked and I have emailed you the "
                  "confirmation.")
        return trace, {"outcome": "failure", "cause": "product_bug"}
    trace.call("send_email", email, None, result(
        "send_email", status="sent", to=email["to"], subject=email["subject"],
        attachments=["flight ticket", "hotel voucher"]))
    if fault == "wrong_city":
        trace.end("failure", "success", "Booked and emailed: flight to Porto and a hotel in "
                  "Lisbon.")
        return trace, {"outcome": "failure", "cause": "agent_error"}
    trace.end("success", "success", "Booked your flight and hotel and emailed the confirmation.")
    return trace, {"outcome": "success", "cause": None}


TRAIN = [dict(seed=11), dict(seed=12, weather_first=True, early_flight=True),
         dict(seed=13, details=True, cheap_hotel=True),
         dict(seed=14, reviews=True, weather_first=True, early_flight=True, cheap_hotel=True)]
TEST = [dict(seed=21, details=True, reviews=True, early_flight=True),
        dict(seed=22, cheap_hotel=True),
        dict(seed=23, weather_first=True), dict(seed=24, fault="wrong_city"),
        dict(seed=25, fault="no_email", details=True), dict(seed=26, fault="flight_503"),
        dict(seed=27, fault="smtp_down", reviews=True, early_flight=True)]


def main() -> None:
    for split, specs in (("train", TRAIN), ("test", TEST)):
        folder = HERE / split
        for old in folder.glob("*.jsonl"):
            old.unlink()
        labels = {}
        order = random.Random(f"{split}-order").sample(range(len(specs)), len(specs))
        for number, index in enumerate(order, 1):
            trace, label = run(f"{TASK}-{split}-{number:02d}", **specs[index])
            trace.write(folder)
            labels[trace.run_id] = label
        (folder / "labels.json").write_text(json.dumps(labels, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
