"""
The places of the generated world and how often people are born there.

Every place belongs to a country, which gives the nationality adjective and
the naming culture of most people born there. A place is a city, a region or
the country itself; its answer in the question files is its bare name
("Chicago"), while a biography may add a qualifier ("Chicago, Illinois").
Birth places follow a Zipf-like law over a popularity ranking: the most
common place takes about 5% of people and many places are seen only once.
"""

import re
from dataclasses import dataclass
from itertools import zip_longest

# A country: "name | nationality adjective | naming culture |", then its
# places on the indented lines below, separated by ";", most prominent first.
# "City, Qualifier" sets the qualifier that a biography may print; a place
# without one is qualified by its country.
COUNTRY_TABLE = """
England | English | english |
    London; England; Manchester; Birmingham; Liverpool; Leeds; Bristol;
    Sheffield; Newcastle upon Tyne; Nottingham; Leicester; Oxford; Cambridge;
    Brighton; Norwich; Plymouth; Southampton; York; Bath; Coventry; Hull;
    Yorkshire; Kent; Lancashire; Cornwall; Exeter; Derby; Bradford; Reading;
    Portsmouth
Scotland | Scottish | celtic |
    Glasgow; Edinburgh; Scotland; Aberdeen; Dundee; Inverness; Paisley;
    Stirling
Wales | Welsh | english |
    Cardiff; Swansea; Wales; Newport; Wrexham; Bangor
Northern Ireland | Northern Irish | celtic |
    Belfast; Derry; Armagh
Ireland | Irish | celtic |
    Dublin; Cork; Ireland; Limerick; Galway; Waterford; Kilkenny; Sligo
United States | American | english |
    New York City; Chicago, Illinois; Philadelphia, Pennsylvania;
    Boston, Massachusetts; Los Angeles, California; Brooklyn, New York;
    San Francisco, California; Detroit, Michigan; Baltimore, Maryland;
    Cleveland, Ohio; St. Louis, Missouri; Pittsburgh, Pennsylvania;
    New Orleans, Louisiana; Cincinnati, Ohio; Milwaukee, Wisconsin;
    Minneapolis, Minnesota; Atlanta, Georgia; Seattle, Washington;
    Denver, Colorado; Houston, Texas; Dallas, Texas; Buffalo, New York;
    Kansas City, Missouri; Columbus, Ohio; Richmond, Virginia;
    Nashville, Tennessee; Memphis, Tennessee; Portland, Oregon;
    Indianapolis, Indiana; Louisville, Kentucky; Hartford, Connecticut;
    Providence, Rhode Island; Omaha, Nebraska; Salt Lake City, Utah;
    Phoenix, Arizona; San Diego, California; Miami, Florida;
    Honolulu, Hawaii; Texas; California; Ohio; Pennsylvania; Virginia;
    Massachusetts; Iowa; Kentucky
Canada | Canadian | english |
    Toronto, Ontario; Montreal, Quebec; Vancouver, British Columbia;
    Ottawa, Ontario; Winnipeg, Manitoba; Calgary, Alberta; Edmonton, Alberta;
    Halifax, Nova Scotia; Hamilton, Ontario; Regina, Saskatchewan; Ontario;
    Quebec
Australia | Australian | english |
    Sydney, New South Wales; Melbourne, Victoria; Brisbane, Queensland;
    Adelaide, South Australia; Perth, Western Australia; Hobart, Tasmania;
    Australia; Canberra; Geelong, Victoria; Queensland; Tasmania
New Zealand | New Zealand | english |
    Auckland; Wellington; Christchurch; Dunedin; New Zealand
South Africa | South African | afrikaans |
    Johannesburg; Cape Town; Durban; Pretoria; Port Elizabeth; Bloemfontein;
    South Africa
Jamaica | Jamaican | english |
    Kingston; Montego Bay; Jamaica
France | French | french |
    Paris; France; Lyon; Marseille; Bordeaux; Toulouse; Lille; Nantes;
    Strasbourg; Nice; Rouen; Grenoble; Montpellier; Rennes; Dijon; Reims;
    Brittany; Normandy; Provence; Alsace; Le Havre; Toulon; Avignon
Belgium | Belgian | dutch |
    Brussels; Antwerp; Ghent; Liege; Bruges; Belgium; Leuven; Namur
Netherlands | Dutch | dutch |
    Amsterdam; Rotterdam; The Hague; Utrecht; Leiden; Haarlem; Groningen;
    Eindhoven; Delft; Maastricht
Germany | German | german |
    Berlin; Germany; Hamburg; Munich; Cologne; Frankfurt; Dresden; Leipzig;
    Stuttgart; Hanover; Bremen; Dusseldorf; Nuremberg; Bonn; Heidelberg;
    Mainz; Kiel; Rostock; Bavaria; Saxony; Westphalia; Karlsruhe; Augsburg;
    Essen; Dortmund; Magdeburg; Potsdam; Freiburg; Lubeck; Wiesbaden
Austria | Austrian | german |
    Vienna; Graz; Salzburg; Linz; Innsbruck; Austria; Klagenfurt
Switzerland | Swiss | german |
    Zurich; Geneva; Basel; Bern; Lausanne; Lucerne; Switzerland
Denmark | Danish | nordic |
    Copenhagen; Aarhus; Odense; Aalborg; Denmark
Norway | Norwegian | nordic |
    Oslo; Bergen; Trondheim; Stavanger; Norway; Tromso; Drammen
Sweden | Swedish | nordic |
    Stockholm; Gothenburg; Malmo; Uppsala; Sweden; Lund; Orebro; Linkoping
Iceland | Icelandic | nordic |
    Reykjavik; Akureyri
Finland | Finnish | finnish |
    Helsinki; Turku; Tampere; Finland; Oulu; Vaasa
Italy | Italian | italian |
    Rome; Milan; Naples; Turin; Florence; Venice; Genoa; Bologna; Palermo;
    Italy; Trieste; Verona; Bari; Catania; Padua; Parma; Sicily; Sardinia;
    Pisa; Siena; Messina; Brescia; Bergamo; Modena
Spain | Spanish | spanish |
    Madrid; Barcelona; Seville; Valencia; Bilbao; Spain; Zaragoza; Malaga;
    Granada; Cordoba; Salamanca; Valladolid; Cadiz; Oviedo; San Sebastian;
    Catalonia; Andalusia; Galicia
Portugal | Portuguese | portuguese |
    Lisbon; Porto; Coimbra; Portugal; Braga; Funchal; Faro
Brazil | Brazilian | portuguese |
    Sao Paulo; Rio de Janeiro; Brazil; Salvador; Belo Horizonte; Recife;
    Curitiba; Fortaleza; Brasilia; Manaus; Belem
Mexico | Mexican | spanish |
    Mexico City; Guadalajara; Monterrey; Puebla; Veracruz; Oaxaca; Merida;
    Tijuana
Argentina | Argentine | spanish |
    Buenos Aires; Rosario; La Plata; Argentina; Mar del Plata; Tucuman; Salta
Chile | Chilean | spanish |
    Santiago; Valparaiso; Concepcion; Chile
Colombia | Colombian | spanish |
    Bogota; Medellin; Cali; Barranquilla; Cartagena; Colombia
Peru | Peruvian | spanish |
    Lima; Arequipa; Cusco; Trujillo; Peru
Cuba | Cuban | spanish |
    Havana; Cuba; Camaguey
Venezuela | Venezuelan | spanish |
    Caracas; Maracaibo; Venezuela
Uruguay | Uruguayan | spanish |
    Montevideo
Philippines | Filipino | spanish |
    Manila; Cebu; Davao; Quezon City
Poland | Polish | polish |
    Warsaw; Krakow; Lodz; Poznan; Gdansk; Wroclaw; Poland; Lublin; Katowice;
    Szczecin; Bydgoszcz; Torun; Silesia
Czech Republic | Czech | czech |
    Prague; Brno; Ostrava; Plzen; Olomouc; Bohemia; Moravia; Liberec
Slovakia | Slovak | czech |
    Bratislava; Kosice; Zilina; Nitra
Hungary | Hungarian | hungarian |
    Budapest; Debrecen; Szeged; Pecs; Miskolc; Gyor; Hungary; Eger; Sopron
Russia | Russian | russian |
    Moscow; Saint Petersburg; Russia; Kazan; Novosibirsk; Yekaterinburg;
    Nizhny Novgorod; Samara; Rostov-on-Don; Volgograd; Omsk; Perm; Irkutsk;
    Saratov; Tula; Siberia; Vladivostok; Smolensk; Yaroslavl
Bulgaria | Bulgarian | russian |
    Plovdiv; Varna; Burgas; Bulgaria
Ukraine | Ukrainian | ukrainian |
    Kiev; Odessa; Kharkiv; Lviv; Dnipro; Ukraine; Donetsk; Zaporizhzhia;
    Poltava; Chernihiv
Romania | Romanian | romanian |
    Bucharest; Cluj-Napoca; Iasi; Timisoara; Brasov; Constanta; Craiova;
    Romania; Transylvania; Sibiu
Serbia | Serbian | south_slavic |
    Belgrade; Novi Sad; Nis; Kragujevac; Serbia; Subotica
Croatia | Croatian | south_slavic |
    Zagreb; Split; Rijeka; Osijek; Dubrovnik; Zadar; Croatia
Bosnia and Herzegovina | Bosnian | south_slavic |
    Sarajevo; Mostar; Banja Luka; Tuzla
Slovenia | Slovenian | south_slavic |
    Ljubljana; Maribor
Greece | Greek | greek |
    Athens; Thessaloniki; Greece; Patras; Piraeus; Heraklion; Crete; Corfu;
    Volos
Turkey | Turkish | turkish |
    Istanbul; Ankara; Izmir; Turkey; Bursa; Adana; Trabzon; Konya; Antalya;
    Gaziantep
Armenia | Armenian | armenian |
    Yerevan; Gyumri; Vanadzor; Armenia
Georgia | Georgian | georgian |
    Tbilisi; Kutaisi; Batumi
Israel | Israeli | hebrew |
    Tel Aviv; Jerusalem; Haifa; Israel; Beersheba; Netanya
Egypt | Egyptian | arabic |
    Cairo; Alexandria; Egypt; Giza; Port Said; Luxor; Aswan; Tanta
Lebanon | Lebanese | arabic |
    Beirut; Lebanon; Tripoli; Sidon; Zahle
Syria | Syrian | arabic |
    Damascus; Aleppo; Homs; Syria; Latakia
Iraq | Iraqi | arabic |
    Baghdad; Basra; Mosul; Iraq; Erbil
Jordan | Jordanian | arabic |
    Amman; Irbid; Zarqa
Saudi Arabia | Saudi | arabic |
    Riyadh; Jeddah; Mecca
Morocco | Moroccan | arabic |
    Casablanca; Rabat; Fez; Marrakesh; Tangier; Morocco
Algeria | Algerian | arabic |
    Algiers; Oran; Constantine; Algeria
Tunisia | Tunisian | arabic |
    Tunis; Sfax; Sousse; Tunisia
Iran | Iranian | persian |
    Tehran; Isfahan; Shiraz; Tabriz; Mashhad; Iran; Kerman; Rasht; Yazd
Pakistan | Pakistani | urdu |
    Karachi; Lahore; Islamabad; Rawalpindi; Peshawar; Faisalabad; Multan;
    Quetta; Pakistan
Bangladesh | Bangladeshi | urdu |
    Dhaka; Chittagong; Sylhet
India | Indian | indian |
    Mumbai; Kolkata; Delhi; Chennai; Bangalore; Hyderabad; India; Pune;
    Ahmedabad; Lucknow; Jaipur; Kanpur; Nagpur; Patna; Kerala; Punjab;
    Bengal; Goa; Mysore; Varanasi; Amritsar; Kochi; Bhopal; Indore; Surat;
    Coimbatore
Sri Lanka | Sri Lankan | indian |
    Colombo; Kandy; Jaffna
China | Chinese | chinese |
    Beijing; Shanghai; China; Guangzhou; Tianjin; Wuhan; Chengdu; Nanjing;
    Hangzhou; Chongqing; Shenyang; Harbin; Suzhou; Qingdao; Dalian; Changsha;
    Kunming; Shenzhen; Xiamen; Zhejiang; Sichuan; Guangdong
Hong Kong | Hong Kong | chinese |
    Hong Kong
Taiwan | Taiwanese | chinese |
    Taipei; Kaohsiung; Taichung; Tainan; Taiwan
Singapore | Singaporean | chinese |
    Singapore
Japan | Japanese | japanese |
    Tokyo; Osaka; Kyoto; Yokohama; Japan; Nagoya; Kobe; Sapporo; Fukuoka;
    Hiroshima; Sendai; Nagasaki; Kanazawa; Niigata; Hokkaido; Okinawa;
    Kumamoto; Shizuoka
South Korea | South Korean | korean |
    Seoul; Busan; Incheon; Daegu; Gwangju; Daejeon; Ulsan; Suwon; Jeju;
    South Korea
Vietnam | Vietnamese | vietnamese |
    Hanoi; Ho Chi Minh City; Hue; Haiphong; Da Nang; Vietnam; Can Tho
Thailand | Thai | thai |
    Bangkok; Chiang Mai; Phuket; Thailand; Khon Kaen
Nigeria | Nigerian | west_african |
    Lagos; Ibadan; Abuja; Kano; Enugu; Port Harcourt; Benin City; Nigeria;
    Onitsha; Abeokuta
Ghana | Ghanaian | west_african |
    Accra; Kumasi; Cape Coast; Tamale; Ghana
Kenya | Kenyan | east_african |
    Nairobi; Mombasa; Kisumu; Nakuru; Eldoret; Kenya
Tanzania | Tanzanian | east_african |
    Dar es Salaam; Dodoma; Arusha; Zanzibar; Tanzania
Uganda | Ugandan | east_african |
    Kampala; Entebbe; Gulu; Uganda
Ethiopia | Ethiopian | east_african |
    Addis Ababa; Gondar; Ethiopia; Harar
"""

# The most common birth places, most common first; every other place ranks
# after these, taking the countries in turn, each country's list in order.
MOST_COMMON = """London; Paris; New York City; Chicago; Berlin; Sydney; Melbourne;
Toronto; England; Rome; Vienna; Budapest; Montreal; Dublin; Glasgow;
Philadelphia; Warsaw; Moscow; Brooklyn; Boston; Amsterdam; Germany;
Los Angeles; Edinburgh; Birmingham; Manchester; Stockholm; Madrid; Tokyo;
Buenos Aires; Liverpool; France; Scotland; Prague; Copenhagen; Oslo; Mumbai;
Istanbul; Athens; Milan"""

# Zipf-like weight of the place of rank r (0 = most common): 1 / (r + OFFSET).
ZIPF_OFFSET = 4


@dataclass(frozen=True)
class Country:
    name: str
    adjective: str
    culture: str


@dataclass(frozen=True)
class Place:
    name: str
    qualifier: str
    country: Country

    @property
    def is_country(self):
        return self.name == self.country.name


def parse_places(table=COUNTRY_TABLE):
    """Returns the places of the table, grouped by country, in table order."""
    blocks = re.split(r"\n(?=\S)", table.strip())
    groups = []
    for block in blocks:
        name, adjective, culture, places = (" ".join(part.split()) for part in block.split("|"))
        country = Country(name, adjective, culture)
        group = []
        for entry in places.split(";"):
            place, _, qualifier = (part.strip() for part in entry.partition(","))
            group.append(Place(place, qualifier or (None if place == name else name), country))
        groups.append(group)
    return groups


def rank_places(groups, most_common=MOST_COMMON):
    """Orders all places by popularity: the most common first, then the rest round robin."""
    by_name = {place.name: place for group in groups for place in group}
    ranked = [by_name[name.strip()] for name in most_common.split(";")]
    seen = {place.name for place in ranked}
    for layer in zip_longest(*groups):
        ranked.extend(place for place in layer if place is not None and place.name not in seen)
    return ranked


PLACES = rank_places(parse_places())


class PlaceSampler:
    """Draws places with the Zipf-like popularity weights from a random.Random."""

    def __init__(self, places=PLACES, offset=ZIPF_OFFSET):
        self.places = places
        self.cumulative_weights = []
        total = 0.0
        for rank in range(len(places)):
            total += 1.0 / (rank + offset)
            self.cumulative_weights.append(total)

    def draw(self, rng, avoid=()):
        """Returns a random place whose name is not in `avoid`."""
        while True:
            place = rng.choices(self.places, cum_weights=self.cumulative_weights)[0]
            if place.name not in avoid:
                return place
